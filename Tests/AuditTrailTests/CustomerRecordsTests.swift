@testable import AuditTrail
@testable import AuditTrailPostgres
@testable import AuditTrailSQLite
import Foundation
import GRDB
import PostgresNIO
import ReceiptCore
import Testing
import TestSupport

/// `customer --offline`'s reads on both stores: a customer found by every id (transaction,
/// original, app transaction, app account token in either case), the original transactions an
/// app transaction id ties together, a token two customers share, and the ids migration v10
/// fills in for notifications stored before it.
@Suite(.timeLimit(.minutes(2))) struct CustomerRecordsTests {
    static let tokenA = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
    static let tokenB = "0b4f2c7e-1111-4a2b-9c3d-5e6f7a8b9c0d"

    func notification(
        _ uuid: String, at seconds: Double, type: String, transaction: String, original: String, token: String?, app: String?
    ) -> NotificationRecord {
        NotificationRecord(
            notificationUUID: uuid, version: .v2, notificationType: type, bundleID: "com.example.app", environment: "Sandbox",
            signedDate: Date(timeIntervalSince1970: seconds), receivedAt: Date(timeIntervalSince1970: seconds + 1), verdict: .test,
            transactionID: transaction, originalTransactionID: original, productID: "com.example.monthly", signedPayload: nil,
            appAccountToken: token, appTransactionID: app)
    }

    /// A transaction the trail recorded as a signed transaction was inspected: its token kept as
    /// sent (upper case), found in any case.
    func purchaseIngest(transaction: String, original: String, token: String, at seconds: Double) -> AuditIngest {
        var p = Purchase(source: .jwsTransaction)
        p.transactionID = transaction
        p.originalTransactionID = original
        p.productID = "com.example.coins"
        p.purchaseDate = Date(timeIntervalSince1970: seconds)
        p.appAccountToken = token
        var decoded = DecodedInput(format: .jwsTransaction)
        decoded.transactions = [p]
        return AuditIngest(decoded: decoded, bytes: Array("jws-\(transaction)".utf8), kind: .file, source: "t.jws", seenAt: Date(timeIntervalSince1970: seconds))
    }

    func fill(_ store: any AuditBackend) async throws {
        // Customer 1: app transaction 701, originals 2001 (two notifications, token A) and 2003
        // (seen with 701 but without a token). Customer 2: app transaction 702, original 2002,
        // the same token A. Customer 3: original 2004 only, token B, from a receipt.
        let written = try await store.writeNotifications([
            .notification(notification("n1", at: 1_760_000_000, type: "SUBSCRIBED", transaction: "2001", original: "2001", token: Self.tokenA, app: "701")),
            .notification(notification("n2", at: 1_762_600_000, type: "DID_RENEW", transaction: "2101", original: "2001", token: Self.tokenA, app: "701")),
            .notification(notification("n3", at: 1_761_000_000, type: "SUBSCRIBED", transaction: "2002", original: "2002", token: Self.tokenA, app: "702")),
            .notification(notification("n4", at: 1_761_500_000, type: "SUBSCRIBED", transaction: "2003", original: "2003", token: nil, app: "701")),
        ])
        #expect(written.map { try? $0.get() } == [.stored, .stored, .stored, .stored])
        _ = try await store.record([purchaseIngest(transaction: "2004", original: "2004", token: Self.tokenB.uppercased(), at: 1_762_000_000)])
        try await store.recordAction(
            AuditAction(
                at: Date(timeIntervalSince1970: 1_762_700_000), user: "support", action: "extend", environment: "Sandbox", requestID: "ticket-1",
                originalTransactionID: "2001", transactionID: nil, productID: "com.example.monthly", requestBody: #"{"extendByDays":7}"#,
                httpStatus: 200, apiError: nil, result: "success"))
    }

    @Test(arguments: BackendKind.allCases) func aCustomerIsFoundByEveryId(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            try await fill(store)
            for key in [CustomerKey.transactionID("2101"), .originalTransactionID("2003"), .appTransactionID("701"), .transactionID("2001")] {
                let found = try await store.customers(key)
                #expect(found.count == 1, "\(key)")
                let customer = try #require(found.first)
                #expect(customer.appTransactionIDs == ["701"], "\(key)")
                #expect(Set(customer.originalTransactionIDs) == ["2001", "2003"], "\(key)")
                #expect(customer.appAccountTokens == [Self.tokenA], "\(key)")
                // Oldest first, whatever order they were stored in.
                #expect(customer.notifications.map(\.record.notificationUUID) == ["n1", "n4", "n2"], "\(key)")
                #expect(customer.actions.map(\.requestID) == ["ticket-1"], "\(key)")
                #expect(customer.purchases.isEmpty, "\(key)")
                #expect(customer.truncated == false)
            }
            #expect(try await store.customers(.transactionID("9999")).isEmpty)
            await store.close()
        }
    }

    @Test(arguments: BackendKind.allCases) func aSharedTokenListsEveryCustomer(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            try await fill(store)
            let shared = try await store.customers(.appAccountToken(Self.tokenA.uppercased()))
            #expect(shared.map(\.appTransactionIDs) == [["701"], ["702"]])
            #expect(shared.map { Set($0.originalTransactionIDs) } == [["2001", "2003"], ["2002"]])
            #expect(shared[1].notifications.map(\.record.notificationUUID) == ["n3"])
            // A receipt's token, stored as sent (upper case), is found in lower case.
            let receipt = try await store.customers(.appAccountToken(Self.tokenB))
            #expect(receipt.count == 1)
            #expect(receipt.first?.originalTransactionIDs == ["2004"])
            #expect(receipt.first?.appAccountTokens == [Self.tokenB])
            let purchase = try #require(receipt.first?.purchases.first)
            #expect(purchase.purchase.transactionID == "2004")
            #expect(purchase.purchase.appAccountToken == Self.tokenB.uppercased())
            #expect(purchase.fromLookup == false)
            #expect(purchase.format == "jws-transaction")
            #expect(purchase.state == "decoded")
            // At most `limit` rows of a table, the newest, and says so.
            let limited = try await store.customers(.appTransactionID("701"), limit: 2)
            #expect(limited.first?.notifications.map(\.record.notificationUUID) == ["n4", "n2"])
            #expect(limited.first?.truncated == true)
            await store.close()
        }
    }

    func write(_ action: String, at seconds: Double, requestID: String, original: String?, app: String?, product: String) -> AuditAction {
        AuditAction(
            at: Date(timeIntervalSince1970: seconds), user: "support", action: action, environment: "Sandbox", requestID: requestID,
            originalTransactionID: original, transactionID: nil, productID: product, requestBody: #"{"extendByDays":3}"#, httpStatus: 200,
            apiError: nil, result: "success", appTransactionID: app)
    }

    /// v13: a write is found by the customer's app transaction id its plan knew, and a
    /// customer's writes include the mass extensions of their products (not of others).
    @Test(arguments: BackendKind.allCases) func writesAreFoundByAppTransactionAndProduct(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            try await fill(store)
            // An original the trail knows nothing else of, linked to customer 1's app transaction.
            try await store.recordAction(write("extend", at: 1_762_800_000, requestID: "ticket-2", original: "2009", app: "701", product: "com.example.monthly"))
            try await store.recordAction(write("mass-extend", at: 1_762_900_000, requestID: "outage-1", original: nil, app: nil, product: "com.example.monthly"))
            try await store.recordAction(write("mass-extend", at: 1_762_950_000, requestID: "outage-2", original: nil, app: nil, product: "com.example.yearly"))
            let byApp = try await store.actions(AuditActionQuery(appTransactionID: "701"))
            #expect(byApp.map(\.requestID) == ["ticket-2"])
            #expect(byApp.first?.appTransactionID == "701")
            #expect(byApp.first?.originalTransactionID == "2009")
            #expect(try await store.actions(AuditActionQuery(appTransactionID: "799")).isEmpty)
            let customer = try #require(try await store.customers(.originalTransactionID("2001")).first)
            #expect(customer.productIDs == ["com.example.monthly"])
            #expect(customer.actions.map(\.requestID) == ["ticket-1", "ticket-2", "outage-1"])
            // Customer 2 (app transaction 702) bought the same product: the mass extension, not customer 1's writes.
            let other = try #require(try await store.customers(.originalTransactionID("2002")).first)
            #expect(other.actions.map(\.requestID) == ["outage-1"])
            await store.close()
        }
    }

    static let payloadWithToken: String = {
        let transaction = UnsignedJWS.make(
            #"{"transactionId":"3001","originalTransactionId":"3001","appAccountToken":"\#(tokenB.uppercased())","appTransactionId":"703","productId":"p"}"#)
        return UnsignedJWS.make(
            #"{"notificationType":"DID_RENEW","notificationUUID":"old-1","data":{"environment":"Sandbox","signedTransactionInfo":"\#(transaction)"}}"#)
    }()

    /// Migration v10 reads the ids of the notifications stored before it from their payloads.
    @Test(arguments: BackendKind.allCases) func migrationFillsTheIdsOfOlderNotifications(_ kind: BackendKind) async throws {
        let ids = NotificationCustomerIDs.read(Self.payloadWithToken)
        #expect(ids.appAccountToken == Self.tokenB)
        #expect(ids.appTransactionID == "703")
        try await TestAuditDatabase.with(kind) { db in
            let insert = """
                INSERT INTO notification (notification_uuid, version, notification_type, received_at, last_received_at, verdict,
                    transaction_id, original_transaction_id, signed_payload)
                VALUES ('old-1', '2', 'DID_RENEW', 1, 1, 'test', '3001', '3001', '\(Self.payloadWithToken)'),
                       ('old-2', '2', 'TEST', 2, 2, 'test', NULL, NULL, 'not a payload')
                """
            switch kind {
            case .sqlite:
                let queue = try DatabaseQueue(path: try #require(db.sqlitePath))
                try AuditStore.migrator.migrate(queue, upTo: "v9")
                try await queue.write { try $0.execute(sql: insert) }
                try queue.close()
            case .postgres:
                try await db.connection { connection in
                    _ = try await PostgresAuditSchema.migrate(CheckedConnection(connection: connection), logger: testLogger, upTo: "pg1-follow")
                    try await connection.query(PostgresQuery(unsafeSQL: insert), logger: testLogger)
                }
            }
            let store = try await db.open()
            #expect(store.migrationsApplied == ["v10", "v11", "v12", "v13", "v14", "v15"])
            let found = try await store.customers(.appAccountToken(Self.tokenB))
            #expect(found.map(\.appTransactionIDs) == [["703"]])
            #expect(found.first?.notifications.map(\.record.appAccountToken) == [Self.tokenB])
            #expect(try await store.notifications().map(\.record.appTransactionID) == ["703", nil])
            await store.close()
        }
    }
}
