import APITestSupport
import Crypto
import Foundation
import AppStoreAPI
import ReceiptCore
import RetryEngine
import Testing
import TestSupport

@Suite struct ServerAPICredentialTests {
    @Test func tokenHeaderClaimsAndES256Signature() throws {
        let (credentials, key) = makeTestCredentials()
        let token = try APIToken.mint(credentials, now: Date(timeIntervalSince1970: 1_800_000_000.7))
        let jwt = try DecodedJWT(token)
        #expect(jwt.headerJSON == #"{"alg":"ES256","kid":"2X9R4HXF34","typ":"JWT"}"#)
        #expect(
            jwt.claims
                == .object([
                    "iss": .string("57246542-96fe-1a63-e053-0824d011072a"), "iat": .integer(1_800_000_000), "exp": .integer(1_800_000_300),
                    "aud": .string("appstoreconnect-v1"), "bid": .string("com.example.app"),
                ]))
        #expect(jwt.signature.count == 64)
        #expect(jwt.verifies(with: key.publicKey))
        #expect(!jwt.verifies(with: P256.Signing.PrivateKey().publicKey))
        let exp = try #require(jwt.claims["exp"]?.int64)
        let iat = try #require(jwt.claims["iat"]?.int64)
        #expect(exp - iat <= 3600)
    }

    @Test func tokensLiveAtMostAnHour() throws {
        let (credentials, _) = makeTestCredentials()
        let hour = try DecodedJWT(try APIToken.mint(credentials, now: TestTime.start, lifetime: 3600))
        #expect(hour.claims["exp"]?.int64 == 1_800_003_600)
        for lifetime in [3601.0, 0, -5] {
            #expect(throws: APICredentialError(.invalidLifetime, "")) { try APIToken.mint(credentials, now: TestTime.start, lifetime: lifetime) }
        }
    }

    @Test func privateKeyIsMaskedInEveryRepresentation() throws {
        let (credentials, key) = makeTestCredentials()
        let pem = key.pemRepresentation
        let pemBody = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }
        let scalar = key.rawRepresentation
        let secrets = pemBody.map(String.init) + [
            scalar.base64EncodedString(), scalar.map { String(format: "%02x", $0) }.joined(), "PRIVATE KEY", "\(Array(scalar))",
        ]
        var dumped = ""
        dump(credentials, to: &dumped)
        var dumpedKey = ""
        dump(credentials.privateKey, to: &dumpedKey)
        let outputs = [
            String(describing: credentials), credentials.debugDescription, String(reflecting: credentials), "\(credentials)", dumped,
            String(describing: credentials.privateKey), credentials.privateKey.debugDescription, dumpedKey,
            String(describing: Mirror(reflecting: credentials).children.map { "\($0.label ?? ""): \($0.value)" }),
        ]
        for output in outputs {
            #expect(output.contains(credentials.privateKey.fingerprint), "\(output)")
            for secret in secrets { #expect(!output.contains(secret), "\(output)") }
        }
        #expect(credentials.privateKey.fingerprint.count == 16)
    }

    @Test func credentialsFromFlagsElseEnvironment() throws {
        let words = Wording("serverapi-credential")
        let folder = TemporaryFolder("receiptdash-api").url
        defer { try? FileManager.default.removeItem(at: folder) }
        let key = P256.Signing.PrivateKey()
        let file = folder.appendingPathComponent("AuthKey_2X9R4HXF34.p8").path
        try key.pemRepresentation.write(toFile: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        let environment = [
            "RECEIPTDASH_API_ISSUER_ID": "env-issuer", "RECEIPTDASH_API_KEY_ID": "ENVKEY", "RECEIPTDASH_API_PRIVATE_KEY_FILE": file,
            "RECEIPTDASH_BUNDLE_ID": "com.example.env",
        ]
        let fromEnvironment = try APICredentials.load(APICredentials.Flags(), environment: environment)
        #expect(fromEnvironment.credentials.issuerID == "env-issuer")
        #expect(fromEnvironment.credentials.bundleID == "com.example.env")
        #expect(fromEnvironment.credentials.appAppleID == nil)
        #expect(fromEnvironment.credentials.privateKey.publicKey.rawRepresentation == key.publicKey.rawRepresentation)
        #expect(fromEnvironment.warnings.isEmpty)

        let flags = APICredentials.Flags(issuerID: "flag-issuer", keyID: "FLAGKEY", bundleID: "com.example.flag", appAppleID: "42")
        let fromFlags = try APICredentials.load(flags, environment: environment)
        #expect(fromFlags.credentials.issuerID == "flag-issuer")
        #expect(fromFlags.credentials.keyID == "FLAGKEY")
        #expect(fromFlags.credentials.bundleID == "com.example.flag")
        #expect(fromFlags.credentials.appAppleID == 42)

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        let readable = try APICredentials.load(APICredentials.Flags(), environment: environment)
        words.said(readable.warnings)
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: file)
        #expect(try APICredentials.load(APICredentials.Flags(), environment: environment).warnings.count == 1)
        words.check()
    }

    @Test func missingSettingsAreNamedTogether() {
        let words = Wording("serverapi-credential")
        do {
            _ = try APICredentials.load(APICredentials.Flags(keyID: "K"), environment: ["RECEIPTDASH_BUNDLE_ID": "b"])
            Issue.record("loaded without an issuer and a key")
        } catch {
            #expect(error.code == .missing)
            words.said(error.reason)
        }
        words.check()
    }

    @Test func aBadKeyFileSaysSoWithoutItsText() throws {
        let scratch = TemporaryFolder("receiptdash-bad")
        defer { scratch.remove() }
        let file = scratch.appending("bad.p8").path
        let text = "-----BEGIN PRIVATE KEY-----\nTUlHSEFnRUFNQk1HQnlxR1NNNDlBZ0VHQ0NxR1NNNDlBd0VIQkcwd2F3SUJBUVFn\n-----END PRIVATE KEY-----\n"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        do {
            _ = try APICredentials.loadKey(file: file)
            Issue.record("accepted a broken key")
        } catch {
            #expect(error.code == .invalidKey)
            #expect(!error.reason.contains("TUlHSEFn"))
        }
        #expect(throws: APICredentialError(.unreadableKeyFile, "")) { try APICredentials.loadKey(file: file + ".absent") }
    }
}

@Suite struct ServerAPIModelTests {
    @Test func retryTableForEveryKnownCode() {
        let retryable: Set<Int> = [4_040_002, 4_040_004, 4_040_006, 5_000_001, 4_290_000]
        #expect(APIErrorCode.known.count == 19)
        for code in APIErrorCode.known {
            #expect(code.isRetryable == retryable.contains(code.rawValue), "\(code)")
            let status = code.rawValue / 10_000
            let decision = APIAttemptResult.apiError(httpStatus: status, code: code).retryDecision
            let expected: APIRetryDecision =
                code == .rateLimitExceeded ? .rateLimited : retryable.contains(code.rawValue) ? .backoff : .final
            #expect(decision == expected, "\(code)")
        }
        #expect(APIAttemptResult.http(status: 429).retryDecision == .rateLimited)
        #expect(APIAttemptResult.http(status: 503).retryDecision == .backoff)
        #expect(APIAttemptResult.http(status: 401).retryDecision == .final)
        #expect(APIAttemptResult.apiError(httpStatus: 502, code: APIErrorCode(5_999_999)).retryDecision == .backoff)
        #expect(APIAttemptResult.success(httpStatus: 200).retryDecision == .final)
        #expect(APIAttemptResult.transport(TransportFailure(.timeout)).retryDecision == .backoff)
        #expect(APIAttemptResult.transport(TransportFailure(.dropped)).retryDecision == .backoff)
        #expect(APIAttemptResult.transport(TransportFailure(.refused)).retryDecision == .backoff)
        #expect(APIAttemptResult.transport(TransportFailure(.tls)).retryDecision == .final)
        #expect(APIAttemptResult.transport(TransportFailure(.invalidResponse)).retryDecision == .final)
    }

    @Test func retryAfterIsUnixMilliseconds() {
        let now = TestTime.start
        #expect(APIRetryAfter.instant("1800000007250", now: now) == Date(timeIntervalSince1970: 1_800_000_007.25))
        #expect(APIRetryAfter.instant("3", now: now) == now.addingTimeInterval(3))
        #expect(APIRetryAfter.instant("Fri, 15 Jan 2027 08:00:07 GMT", now: now) == now.addingTimeInterval(7))
        #expect(APIRetryAfter.instant("soon", now: now) == nil)
        #expect(APIRetryAfter.instant("99999999999999999999999", now: now) == nil)
    }

    @Test func hostsFollowTheEndpointRule() throws {
        #expect(APIHosts.apple.production.baseURL == "https://api.storekit.apple.com")
        #expect(APIHosts.apple.sandbox.baseURL == "https://api.storekit-sandbox.apple.com")
        #expect(throws: VerificationError(.insecureEndpoint, "")) { try APIHost(.production, url: "http://api.example.com") }
        #expect(throws: VerificationError(.invalidEndpoint, "")) { try APIHost(.sandbox, url: "ftp://127.0.0.1/x") }
        #expect(throws: VerificationError(.invalidEndpoint, "")) { try APIHost(.sandbox, url: "http://127.0.0.1/x?y=1") }
        let local = try APIHost(.sandbox, url: "http://127.0.0.1:8080/api/sandbox/")
        #expect(local.url(for: try .transactionInfo("1")) == "http://127.0.0.1:8080/api/sandbox/inApps/v1/transactions/1")
    }

    @Test func requestRecordAsJSON() {
        let record = APIRequestRecord(
            endpoint: .transactionHistory, environment: .production, url: "https://api.storekit.apple.com/inApps/v2/history/1",
            result: .apiError(httpStatus: 429, code: .rateLimitExceeded), latencyMilliseconds: 12.3456,
            retryAfter: Date(timeIntervalSince1970: 1_800_000_007.25), waitSeconds: 7.25)
        #expect(
            record.json.compactJSON
                == #"{"api_error":4290000,"endpoint":"transaction-history","environment":"Production","http_status":429,"latency_ms":12.346,"retry_after":7.25,"url":"https://api.storekit.apple.com/inApps/v2/history/1"}"#
        )
    }

    @Test func notificationHistoryRefusesTwoFilters() {
        let filter = NotificationHistoryFilter(
            startDate: TestTime.start, endDate: TestTime.start, notificationType: "REFUND", transactionID: "1")
        #expect(throws: APIFailure(.invalidRequest, "")) { try APIRequest.notificationHistory(filter) }
    }
}
