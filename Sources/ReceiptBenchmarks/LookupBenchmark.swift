import Crypto
import Foundation
import AppStoreAPI
import ReceiptCore
import ReceiptSimulator

/// The customer `receiptdash bench --lookup-transactions N` looks up: `N` production
/// transactions of one customer, monthly renewals spread over `subscriptions` subscriptions
/// (every tenth transaction a consumable), served by an in-process simulator with a latency.
public struct LookupBenchmark: Sendable {
    public let simulator: ServerAPISimulator
    /// Credentials whose key the simulator checks tokens against.
    public let credentials: APICredentials
    /// A transaction id of the customer (the newest).
    public let transactionID: String
    public let transactions: Int

    public static let bundleID = "com.example.receiptdash.bench"

    /// Starts the simulator (`latency` seconds per answer, 20 items a page).
    public static func start(transactions count: Int, subscriptions: Int = 3, latency: Double) async throws -> LookupBenchmark {
        let key = P256.Signing.PrivateKey()
        let credentials = APICredentials(
            issuerID: "57246542-96fe-1a63-e053-0824d011072a", keyID: "BENCH00001", privateKey: APIPrivateKey(key), bundleID: bundleID,
            appAppleID: 1_234_567_890)
        let data = customer(transactions: count, subscriptions: subscriptions, now: Date())
        let simulator = try await ServerAPISimulator.start(
            ServerAPIConfiguration(latency: latency, data: data, publicKey: key.publicKey))
        let newest = data.transactions.last?["transactionId"]?.text ?? ""
        return LookupBenchmark(simulator: simulator, credentials: credentials, transactionID: newest, transactions: count)
    }

    /// The customer's data: transaction `i` is purchased `count - i` days before `now`.
    public static func customer(transactions count: Int, subscriptions: Int, now: Date) -> ServerAPIData {
        let nowMs = Int64(now.timeIntervalSince1970 * 1000)
        let day: Int64 = 86_400_000
        var rows: [[String: JSONValue]] = []
        var renewals: [[String: JSONValue]] = []
        for i in 0..<count {
            let id = String(2_000_000_700_000_000 + i)
            let purchase = nowMs - Int64(count - i) * day
            var row: [String: JSONValue] = [
                "transactionId": .string(id), "bundleId": .string(bundleID), "purchaseDate": .integer(purchase),
                "environment": .string("Production"), "appTransactionId": .string("7040000000000001"), "storefront": .string("USA"),
                "currency": .string("USD"),
            ]
            if i % 10 == 9 {
                row["originalTransactionId"] = .string(id)
                row["productId"] = .string("com.example.bench.coins")
                row["type"] = .string("Consumable")
                row["price"] = .integer(990)
            } else {
                let chain = i % max(1, subscriptions)
                row["originalTransactionId"] = .string(String(2_000_000_700_000_000 + chain))
                row["productId"] = .string("com.example.bench.plan\(chain)")
                row["subscriptionGroupIdentifier"] = .string("2100000\(chain)")
                row["type"] = .string("Auto-Renewable Subscription")
                row["expiresDate"] = .integer(purchase + Int64(subscriptions) * day)
                row["transactionReason"] = .string(i < subscriptions ? "PURCHASE" : "RENEWAL")
                row["price"] = .integer(4990)
            }
            rows.append(row)
        }
        for chain in 0..<max(1, subscriptions) {
            renewals.append([
                "originalTransactionId": .string(String(2_000_000_700_000_000 + chain)),
                "productId": .string("com.example.bench.plan\(chain)"), "autoRenewProductId": .string("com.example.bench.plan\(chain)"),
                "autoRenewStatus": .integer(1), "environment": .string("Production"),
            ])
        }
        return ServerAPIData(bundleID: bundleID, appAppleID: 1_234_567_890, transactions: rows, renewals: renewals)
    }
}
