import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import ReceiptCore

/// Where verifyReceipt lives.
public struct VerifyReceiptEndpoints: Sendable, Hashable {
    public var production: String
    public var sandbox: String

    public init(production: String, sandbox: String) {
        self.production = production
        self.sandbox = sandbox
    }

    /// Apple's servers.
    public static let apple = VerifyReceiptEndpoints(
        production: "https://buy.itunes.apple.com/verifyReceipt", sandbox: "https://sandbox.itunes.apple.com/verifyReceipt")
}

/// One HTTP exchange with verifyReceipt.
public struct VerificationAttempt: Sendable, Hashable {
    public var url: String
    /// `Production` or `Sandbox`: which endpoint was asked.
    public var endpoint: String
    public var httpStatus: Int?
    public var status: Int?
    public var isRetryable: Bool?
    /// Transport error in words (timeout, connection refused, TLS), if any.
    public var error: String?
    public var latencyMilliseconds: Double
    /// The wait before the next attempt, when this one was retried.
    public var retryAfterSeconds: Double?

    /// What came back, in a few words: `status N`, `HTTP N`, the transport error, or `no answer`.
    public var resultText: String {
        status.map { "status \($0)" } ?? httpStatus.map { "HTTP \($0)" } ?? error ?? "no answer"
    }

    public init(
        url: String, endpoint: String, httpStatus: Int? = nil, status: Int? = nil, isRetryable: Bool? = nil, error: String? = nil,
        latencyMilliseconds: Double, retryAfterSeconds: Double? = nil
    ) {
        self.url = url
        self.endpoint = endpoint
        self.httpStatus = httpStatus
        self.status = status
        self.isRetryable = isRetryable
        self.error = error
        self.latencyMilliseconds = latencyMilliseconds
        self.retryAfterSeconds = retryAfterSeconds
    }
}

/// The end of one receipt's verification: Apple's answer, or why there was none.
public struct VerificationOutcome: Sendable {
    public var status: Int?
    public var environment: String?
    public var attempts: [VerificationAttempt]
    /// The decoded response body (the same model `inspect` prints).
    public var response: DecodedInput?
    /// Why no status could be had, after retries.
    public var failure: String?

    public var explanation: AppleStatus? { status.map { AppleStatus.explain($0, isRetryable: attempts.last?.isRetryable) } }

    public init(
        status: Int? = nil, environment: String? = nil, attempts: [VerificationAttempt] = [], response: DecodedInput? = nil,
        failure: String? = nil
    ) {
        self.status = status
        self.environment = environment
        self.attempts = attempts
        self.response = response
        self.failure = failure
    }
}

/// Progress of one verification, for the live log and progress bars.
public enum ClientEvent: Sendable, Hashable {
    case sending(attempt: Int, url: String)
    case retrying(inSeconds: Double, reason: String)
}

/// A verifyReceipt client: production first, sandbox on 21007, production on 21008, retries with
/// backoff on temporary failures, TLS certificates always verified.
///
/// ```swift
/// let client = try VerifyReceiptClient(secret: try SharedSecret.load(file: nil, environment: env))
/// let outcome = await client.verify(receiptData: base64)
/// try await client.shutdown()
/// ```
public final class VerifyReceiptClient: Sendable {
    public let endpoints: VerifyReceiptEndpoints
    public let retry: RetryPolicy
    let secret: SharedSecret?
    let excludeOldTransactions: Bool
    let requestTimeout: TimeAmount
    let http: HTTPClient
    /// Largest response body read (Apple's are far smaller).
    static let maximumResponseBytes = 8 * 1024 * 1024

    /// - Parameter extraTrustRoots: PEM or DER certificates to trust besides the system's
    ///   (a corporate proxy's root). Certificate checks are never turned off.
    public init(
        endpoints: VerifyReceiptEndpoints = .apple, secret: SharedSecret? = nil, excludeOldTransactions: Bool = false,
        retry: RetryPolicy = RetryPolicy(), connectTimeout: TimeAmount = .seconds(5), requestTimeout: TimeAmount = .seconds(20),
        extraTrustRoots: [NIOSSLCertificate] = []
    ) {
        self.endpoints = endpoints
        self.secret = secret
        self.excludeOldTransactions = excludeOldTransactions
        self.retry = retry
        self.requestTimeout = requestTimeout
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .fullVerification
        if !extraTrustRoots.isEmpty { tls.additionalTrustRoots = [.certificates(extraTrustRoots)] }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.timeout = .init(connect: connectTimeout, read: requestTimeout)
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 128)
        configuration.redirectConfiguration = .disallow
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Reads certificates for `--ca-file` (PEM with one or more certificates, or DER).
    public static func loadTrustRoots(file: String) throws -> [NIOSSLCertificate] {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        if String(decoding: bytes, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") {
            return try NIOSSLCertificate.fromPEMBytes(bytes)
        }
        return [try NIOSSLCertificate(bytes: bytes, format: .der)]
    }

    public func shutdown() async throws {
        try await http.shutdown()
    }

    struct RequestBody: Encodable {
        var receiptData: String
        var password: String?
        var excludeOldTransactions: Bool?

        enum CodingKeys: String, CodingKey {
            case receiptData = "receipt-data"
            case password
            case excludeOldTransactions = "exclude-old-transactions"
        }
    }

    /// Verifies one base64 receipt.
    public func verify(receiptData: String, onEvent: (@Sendable (ClientEvent) -> Void)? = nil) async -> VerificationOutcome {
        let body: Data
        do {
            body = try JSONEncoder().encode(
                RequestBody(receiptData: receiptData, password: secret?.value, excludeOldTransactions: excludeOldTransactions ? true : nil))
        } catch {
            return VerificationOutcome(attempts: [], failure: "could not build the request")
        }
        var attempts: [VerificationAttempt] = []
        var url = endpoints.production
        var endpoint = "Production"
        var hops = 0
        var retries = 0
        var retried21002 = false
        let started = Date()
        while true {
            if Task.isCancelled { return VerificationOutcome(attempts: attempts, failure: "cancelled") }
            onEvent?(.sending(attempt: attempts.count + 1, url: url))
            var (attempt, parsed) = await post(body, to: url, endpoint: endpoint)
            var decision: RetryDecision
            if let status = attempt.status {
                if status == 21007, endpoint == "Production", hops < 2 {
                    attempts.append(attempt)
                    (url, endpoint, hops) = (endpoints.sandbox, "Sandbox", hops + 1)
                    continue
                }
                if status == 21008, endpoint == "Sandbox", hops < 2 {
                    attempts.append(attempt)
                    (url, endpoint, hops) = (endpoints.production, "Production", hops + 1)
                    continue
                }
                decision = RetryDecision.forStatus(status, isRetryable: attempt.isRetryable, alreadyRetried21002: retried21002)
                if status == 21002 { retried21002 = true }
            } else if let code = attempt.httpStatus {
                decision = RetryDecision.forHTTP(code)
            } else if let error = attempt.error, error.hasPrefix("TLS failed") {
                decision = .final  // a certificate problem does not go away by asking again
            } else {
                decision = .retry(reason: attempt.error ?? "no answer")
            }
            guard case .retry(let reason) = decision else {
                attempts.append(attempt)
                if attempt.status == nil {
                    let why = attempt.error ?? attempt.httpStatus.map { "HTTP \($0)" } ?? "no answer"
                    return VerificationOutcome(attempts: attempts, failure: why)
                }
                return finish(attempts, parsed)
            }
            retries += 1
            let wait = retry.delay(forRetry: retries, retryAfter: parsed.retryAfter, random: Double.random(in: 0...1))
            guard retries <= retry.maximumRetries, Date().timeIntervalSince(started) + wait <= retry.totalBudget else {
                attempts.append(attempt)
                if attempt.status != nil { return finish(attempts, parsed) }
                return VerificationOutcome(
                    attempts: attempts, failure: "gave up after \(attempts.count) attempts: \(reason)")
            }
            attempt.retryAfterSeconds = wait
            attempts.append(attempt)
            onEvent?(.retrying(inSeconds: wait, reason: reason))
            try? await Task.sleep(nanoseconds: UInt64(wait * 1e9))
        }
    }

    private func finish(_ attempts: [VerificationAttempt], _ parsed: Parsed) -> VerificationOutcome {
        VerificationOutcome(
            status: attempts.last?.status, environment: parsed.response?.rawEnvironment ?? attempts.last?.endpoint,
            attempts: attempts, response: parsed.response, failure: nil)
    }

    struct Parsed {
        var response: DecodedInput?
        var retryAfter: Double?
    }

    private func post(_ body: Data, to url: String, endpoint: String) async -> (VerificationAttempt, Parsed) {
        var attempt = VerificationAttempt(url: url, endpoint: endpoint, latencyMilliseconds: 0)
        var parsed = Parsed()
        let start = DispatchTime.now().uptimeNanoseconds
        do {
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "User-Agent", value: "receiptdash/0.1")
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await http.execute(request, timeout: requestTimeout)
            attempt.httpStatus = Int(response.status.code)
            parsed.retryAfter = response.headers.first(name: "Retry-After").flatMap(Double.init)
            let bytes = try await response.body.collect(upTo: Self.maximumResponseBytes)
            if response.status == .ok {
                let data = [UInt8](buffer: bytes)
                if let json = try? JSONValue.parse(data), let status = json["status"]?.int64 {
                    attempt.status = Int(status)
                    attempt.isRetryable = json["is-retryable"]?.bool ?? json["is_retryable"]?.bool
                    parsed.response = try? ReceiptDecoder().decode(data)
                } else {
                    attempt.error = "the answer is not verifyReceipt JSON"
                }
            }
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            attempt.error = "timed out (\(error))"
        } catch let error as NIOSSLError {
            attempt.error = "TLS failed: \(error)"
        } catch let error as NIOSSLExtraError {
            attempt.error = "TLS failed: \(error)"
        } catch {
            attempt.error = Self.describe(error)
        }
        let latency = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        attempt.latencyMilliseconds = latency
        return (attempt, parsed)
    }

    static func describe(_ error: any Error) -> String {
        let text = "\(error)"
        if text.contains("certificate") || text.contains("handshake") || text.contains("SSL") { return "TLS failed: \(text)" }
        if text.contains("remoteConnectionClosed") || text.contains("connectionClosed") || text.contains("EOF") {
            return "the connection was closed without an answer"
        }
        if text.contains("connectTimeout") || text.contains("Timeout") || text.contains("deadline") { return "timed out (\(text))" }
        if text.contains("refused") { return "connection refused" }
        return text
    }
}
