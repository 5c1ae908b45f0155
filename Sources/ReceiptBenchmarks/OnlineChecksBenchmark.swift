import AppStoreClients
import Foundation
import OnlineRevocation
import ReceiptCore
import ReceiptSimulator
import ReceiptTrust

extension BenchmarkRun {
    /// `bench --verify --online-checks`: JWS verified with online checks and a warm OCSP cache,
    /// beside the bare ES256 verify of the same signatures in the same run (``benchJWS``).
    ///
    /// Apple's chains in the corpus have expired (online checks judge them now) and Apple's
    /// responder is not for benchmarks, so the tokens are the simulator's: notifications
    /// shaped as Apple's (a nested transaction and renewal info, three signatures each) signed
    /// by its test PKI, whose leaf and intermediate name its OCSP responder on loopback. The
    /// first round fetches two answers (leaf, intermediate); every later token is judged from
    /// the cache, which the run checks.
    public func benchJWSOnlineChecks(notifications: Int = 16) async throws {
        let server = try await OCSPResponderServer.start()
        do {
            try await benchWarmOnline(server, notifications: notifications)
        } catch {
            try? await server.stop()
            throw error
        }
        try? await server.stop()
    }

    private func benchWarmOnline(_ server: OCSPResponderServer, notifications: Int) async throws {
        let pki = try AppleTestPKI(ocspURL: server.url)
        server.responder.serve(pki)
        let now = Date()
        let millis = Int64(now.timeIntervalSince1970 * 1000) - 60_000
        var inputs: [(String, [UInt8])] = []
        for i in 0..<notifications {
            let transaction: [String: Any] = [
                "transactionId": "71000000000\(10_000 + i)", "originalTransactionId": "71000000000\(10_000 + i)",
                "webOrderLineItemId": "9100000000\(10_000 + i)", "bundleId": "com.example.bench", "productId": "pro.monthly",
                "subscriptionGroupIdentifier": "21000000", "purchaseDate": millis, "originalPurchaseDate": millis,
                "expiresDate": millis + 2_592_000_000, "quantity": 1, "type": "Auto-Renewable Subscription",
                "inAppOwnershipType": "PURCHASED", "signedDate": millis, "environment": "Production",
                "transactionReason": "RENEWAL", "storefront": "USA", "storefrontId": "143441", "price": 9990, "currency": "USD",
            ]
            let renewal: [String: Any] = [
                "originalTransactionId": "71000000000\(10_000 + i)", "autoRenewProductId": "pro.monthly", "productId": "pro.monthly",
                "autoRenewStatus": 1, "signedDate": millis, "environment": "Production", "recentSubscriptionStartDate": millis,
                "renewalDate": millis + 2_592_000_000,
            ]
            let token = try pki.signJWS(payload: [
                "notificationType": "DID_RENEW", "notificationUUID": UUID().uuidString.lowercased(), "version": "2.0",
                "signedDate": millis,
                "data": [
                    "bundleId": "com.example.bench", "environment": "Production", "appAppleId": 1_234_567_890, "status": 1,
                    "signedTransactionInfo": try pki.signJWS(payload: transaction),
                    "signedRenewalInfo": try pki.signJWS(payload: renewal),
                ] as [String: Any],
            ])
            inputs.append(("notification-\(i).jws", Array(token.utf8)))
        }
        let decoder = ReceiptDecoder()
        let tokens = try inputs.map { try decoder.decode($0.1) }
        let checks = OnlineChecks(transport: HTTPOCSPTransport())
        let evaluator = TrustEvaluator(anchors: try TrustAnchors.apple.addingTestRoots([pki.rootDER]))
        let options = TrustOptions(now: now, onlineChecks: checks)
        // The simulator's root is a test root: a clean chain with good OCSP answers is `test`.
        for token in tokens {
            let report = await evaluator.evaluate(token, options: options)
            guard report.verdict == .test, report.retryable == false else {
                throw BenchmarkError(.unexpectedVerdict, "online checks did not pass on the simulator's tokens: \(report.headline)")
            }
        }
        print("online checks: \(checks.fetchCount) OCSP requests to warm the cache (leaf and intermediate)")
        try await benchJWS(
            inputs, tokens: tokens, skipped: 0, evaluator: evaluator, options: options, expected: .test,
            label: "decode + signature + chain + online checks, warm OCSP cache")
        print("online checks: \(checks.fetchCount) OCSP requests in all (the measured rounds asked none)")
        if checks.fetchCount != 2 { throw BenchmarkError(.cacheNotWarm, "the OCSP cache was not warm: \(checks.fetchCount) requests") }
    }
}
