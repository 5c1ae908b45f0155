import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import OutboundHTTP
import AppStoreAPI
import ReceiptCore
import RetryEngine

/// Progress of one verification, for the live log and progress bars.
public enum ClientEvent: Sendable, Hashable {
    case sending(attempt: Int, endpoint: VerifyEndpoint)
    case retrying(inSeconds: Double, reason: RetryReason)
}

/// A verifyReceipt client: production first, sandbox on 21007, production on 21008, retries with
/// backoff on temporary failures (the table in `AttemptResult.retryDecision`), TLS certificates
/// always verified. Time and waiting come from an injected ``ServiceClock``.
///
/// ```swift
/// let client = VerifyReceiptClient(secret: try SharedSecret.load(file: nil, environment: env, warn: { _ in }))
/// let outcome = await client.verify(receiptData: base64)
/// try await client.shutdown()
/// ```
public final class VerifyReceiptClient: Sendable {
    public let endpoints: VerifyReceiptEndpoints
    public let retry: RetryPolicy
    public let clock: ServiceClock
    let secret: SharedSecret?
    let excludeOldTransactions: Bool
    let requestTimeout: TimeAmount
    let http: HTTPClient
    /// Where each attempt is counted (`GET /metrics` of a receiver in the same process).
    let metrics: ServiceMetrics
    /// Largest response body read (Apple's are far smaller).
    static let maximumResponseBytes = 8 * 1024 * 1024

    /// - Parameter extraTrustRoots: PEM or DER certificates to trust besides the system's
    ///   (a corporate proxy's root). Certificate checks are never turned off.
    public init(
        endpoints: VerifyReceiptEndpoints = .apple, secret: SharedSecret? = nil, excludeOldTransactions: Bool = false,
        retry: RetryPolicy = RetryPolicy(), connectTimeout: TimeAmount = .seconds(5), requestTimeout: TimeAmount = .seconds(20),
        extraTrustRoots: [NIOSSLCertificate] = [], clock: ServiceClock = .system, metrics: ServiceMetrics = .shared
    ) {
        self.metrics = metrics
        self.endpoints = endpoints
        self.secret = secret
        self.excludeOldTransactions = excludeOldTransactions
        self.retry = retry
        self.clock = clock
        self.requestTimeout = requestTimeout
        http = OutboundHTTPClient.make(
            connectTimeout: connectTimeout, readTimeout: requestTimeout, extraTrustRoots: extraTrustRoots, connectionsPerHost: 128)
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
            return VerificationOutcome(failure: VerificationFailure(.invalidRequest, "could not build the request"))
        }
        var attempts: [VerificationAttempt] = []
        var endpoint = endpoints.production
        var hops = 0
        var retried21002 = false
        var last: (reason: RetryReason, retryAfter: Double?, parsed: Parsed)?
        let retrier = Retrier(policy: retry, clock: clock.clock)
        let end = await retrier.run(willWait: { wait, _ in
            attempts[attempts.count - 1].retryAfterSeconds = wait
            onEvent?(.retrying(inSeconds: wait, reason: last!.reason))
        }) { _ -> AttemptStep<VerificationOutcome> in
            onEvent?(.sending(attempt: attempts.count + 1, endpoint: endpoint))
            let posted = await post(body, to: endpoint)
            let attempt = posted.attempt
            metrics.verifyReceiptAttempt(environment: endpoint.kind, result: attempt.result)
            let parsed = posted.parsed
            attempts.append(attempt)
            if let status = attempt.status, hops < 2 {
                if status == 21007, endpoint.kind == .production {
                    (endpoint, hops) = (endpoints.sandbox, hops + 1)
                    return .again
                }
                if status == 21008, endpoint.kind == .sandbox {
                    (endpoint, hops) = (endpoints.production, hops + 1)
                    return .again
                }
            }
            let decision = attempt.result.retryDecision(alreadyRetried21002: retried21002)
            if attempt.status == 21002 { retried21002 = true }
            guard case .retry(let reason) = decision else {
                if attempt.status == nil { return .done(VerificationOutcome(attempts: attempts, failure: .final(attempt.result))) }
                return .done(finish(attempts, parsed))
            }
            let retryAfter = parsed.retryAfter.flatMap { RetryAfter.seconds($0, now: clock.now()) }
            last = (reason, retryAfter, parsed)
            return .retry(retryAfter: retryAfter)
        }
        switch end {
        case .done(let outcome):
            return outcome
        case .cancelled:
            return VerificationOutcome(attempts: attempts, failure: VerificationFailure(.cancelled, "cancelled", last: attempts.last?.result))
        case .gaveUp(let giveUp):
            let (reason, retryAfter, parsed) = last!
            if attempts.last?.status != nil { return finish(attempts, parsed) }
            let code: VerificationFailure.Code = giveUp.kind == .retries ? .retriesExhausted : .retryBudgetExhausted
            let asked = retryAfter.map { String(format: "Retry-After asked for %.0f s", $0) }
            // A failure without an answer names the URL it was sent to.
            let words = if let sent = attempts.last, case .transport(let failure) = sent.result { failure.said(at: sent.url) } else { reason.description }
            return VerificationOutcome(
                attempts: attempts, failure: VerificationFailure(code, giveUp.sentence(words, asked: asked), last: attempts.last?.result))
        }
    }

    private func finish(_ attempts: [VerificationAttempt], _ parsed: Parsed) -> VerificationOutcome {
        VerificationOutcome(
            status: attempts.last?.status, environment: parsed.response?.rawEnvironment ?? attempts.last?.endpoint.rawValue,
            attempts: attempts, response: parsed.response, failure: nil)
    }

    struct Parsed {
        var response: DecodedInput?
        /// The `Retry-After` header as sent.
        var retryAfter: String?
    }

    private func post(_ body: Data, to endpoint: VerifyEndpoint) async -> (attempt: VerificationAttempt, parsed: Parsed) {
        var parsed = Parsed()
        var httpStatus: Int?
        let result: AttemptResult
        let start = DispatchTime.now().uptimeNanoseconds
        do {
            var request = HTTPClientRequest(url: endpoint.url)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "User-Agent", value: "receiptdash/0.1")
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await http.execute(request, timeout: requestTimeout)
            httpStatus = Int(response.status.code)
            parsed.retryAfter = response.headers.first(name: "Retry-After")
            let bytes = try await response.body.collect(upTo: Self.maximumResponseBytes)
            if response.status == .ok {
                let data = [UInt8](buffer: bytes)
                if let json = try? JSONValue.parse(data), let status = json["status"]?.int64 {
                    result = .apple(status: Int(status), isRetryable: json["is-retryable"]?.bool ?? json["is_retryable"]?.bool)
                    parsed.response = try? ReceiptDecoder().decode(data)
                } else {
                    result = .transport(TransportFailure(.invalidResponse))
                }
            } else {
                result = .http(status: Int(response.status.code))
            }
        } catch {
            result = .transport(TransportFailure.classify(error))
        }
        let latency = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        let attempt = VerificationAttempt(
            url: endpoint.url, endpoint: endpoint.kind, result: result, httpStatus: httpStatus, latencyMilliseconds: latency)
        return (attempt, parsed)
    }
}

