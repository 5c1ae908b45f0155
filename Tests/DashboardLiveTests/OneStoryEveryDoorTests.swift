import APITestSupport
import AppStoreAPI
import AppStoreClients
import AuditTrail
import AuditTrailSQLite
import CustomerSearch
import CustomerTimeline
import Dashboard
import DashboardLive
import Foundation
import ReceiptCore
import ReceiptSimulator
import ReceiptTrust
import Testing
import TestSupport

/// One story whichever door: the simulator's third customer (every kind of event, and two
/// notifications Apple lists but never delivered) asked through `customer`'s finder and through
/// the dashboard's look-up adapter, against the same trail at the same instant, tells the same
/// events and the same issues: the dashboard reads Apple's Notification History as `customer`
/// does.
@Suite(.timeLimit(.minutes(2))) struct OneStoryEveryDoorTests {
    /// The Server API simulator, a client and look-up service that trust its root, and an empty
    /// trail; `at` is the instant both doors judge at.
    static func live() async throws -> (ServerAPISimulator, AppStoreServerAPIClient, CustomerLookupService, AuditStore, Date) {
        let (credentials, key) = makeTestCredentials(bundleID: ServerAPIData.demoBundleID)
        let simulator = try await ServerAPISimulator.start(ServerAPIConfiguration(publicKey: key.publicKey))
        let client = AppStoreServerAPIClient(credentials: credentials, hosts: try simulator.hosts, requestTimeout: .seconds(60))
        let anchors = try TrustAnchors.apple.addingTestRoots([simulator.pki.rootDER])
        let at = Date()
        let pipeline = ReceiptPipeline(at: at, evaluator: TrustEvaluator(anchors: anchors))
        let folder = TemporaryFolder("one-story").path
        return (simulator, client, CustomerLookupService(client: client, pipeline: pipeline), try AuditStore(path: folder + "/audit.sqlite"), at)
    }

    @Test func theDashboardAndTheCommandTellTheSameStory() async throws {
        let (simulator, client, service, store, at) = try await Self.live()

        // The command's door: what `customer --order-id MQ5X7UVWXY --db …` runs.
        let found = await CustomerFinder(store: store, lookup: service).find(.orderID("MQ5X7UVWXY"), at: at)
        let command = try #require(found.stories.first)

        // The dashboard's door: its adapter, the same trail (read only: nothing recorded between).
        var adapter = ServiceLookup(service: service, store: nil)
        adapter.trail = store
        let result = await adapter.lookUp(.orderID("MQ5X7UVWXY")) { _ in }
        let sent = await adapter.sentNotifications(for: result)
        let records = try #require(await adapter.storedRecords(for: result))
        var state = DashboardState(now: at)
        state.wallClock = at
        let id = state.add(result, stored: StoredCustomerRecordsBox(records, sent: sent.items, sentError: sent.error))
        let dashboard = try #require(state.customerStories[id])

        #expect(command.issues.map(\.code).contains(.notificationMissing))
        #expect(dashboard.issues.map(\.code) == command.issues.map(\.code))
        #expect(dashboard.issues.map(\.summary) == command.issues.map(\.summary))
        #expect(dashboard.events.map(\.kind) == command.events.map(\.kind))
        #expect(dashboard.events.map(\.refs) == command.events.map(\.refs))
        #expect(dashboard.trust == command.trust)

        try await client.shutdown()
        try await simulator.stop()
        await store.close()
    }

    /// Every id of the customer leads to the same story: the order ID, a transaction id, the
    /// original transaction id, the app transaction id and the app account token (the trail
    /// alone knows tokens: the look-up is recorded first, as `lookup --db` does); offline, every
    /// id the trail knows.
    @Test func everyIdOfTheCustomerTellsTheSameStory() async throws {
        let (simulator, client, service, store, at) = try await Self.live()
        let recorded = await service.lookUp(.orderID("MQ5X7UVWXY"))
        _ = try await store.recordLookup(recorded, bundleID: ServerAPIData.demoBundleID, source: "lookup order MQ5X7UVWXY", at: at)

        let finder = CustomerFinder(store: store, lookup: service)
        let byOrder = try #require(await finder.find(.orderID("MQ5X7UVWXY"), at: at).stories.first)
        let original = try #require(byOrder.ids.originalTransactionIDs.first)
        let transaction = try #require(byOrder.events.compactMap(\.transactionID).last)
        let app = try #require(byOrder.ids.appTransactionIDs.first)
        let token = try #require(byOrder.ids.appAccountTokens.first)
        for query: CustomerQuery in [.transactionID(transaction), .originalTransactionID(original), .appTransactionID(app), .appAccountToken(token)] {
            let found = await finder.find(query, at: at)
            let story = try #require(found.stories.first, "\(query)")
            #expect(found.stories.count == 1, "\(query)")
            #expect(story.events.map(\.kind) == byOrder.events.map(\.kind), "\(query)")
            #expect(story.events.map(\.refs) == byOrder.events.map(\.refs), "\(query)")
            #expect(story.issues.map(\.code) == byOrder.issues.map(\.code), "\(query)")
            #expect(story.ids.originalTransactionIDs.sorted() == byOrder.ids.originalTransactionIDs.sorted(), "\(query)")
        }
        // Offline, the trail alone: every id it knows tells the same story.
        let offline = CustomerFinder(store: store, lookup: nil)
        let byOriginal = try #require(await offline.find(.originalTransactionID(original), at: at).stories.first)
        #expect(byOriginal.offline)
        #expect(!byOriginal.events.isEmpty)
        for query: CustomerQuery in [.transactionID(transaction), .appTransactionID(app), .appAccountToken(token)] {
            let found = await offline.find(query, at: at)
            let story = try #require(found.stories.first, "offline \(query)")
            #expect(found.stories.count == 1, "offline \(query)")
            #expect(story.events.map(\.kind) == byOriginal.events.map(\.kind), "offline \(query)")
            #expect(story.events.map(\.refs) == byOriginal.events.map(\.refs), "offline \(query)")
            #expect(story.issues.map(\.code) == byOriginal.issues.map(\.code), "offline \(query)")
        }

        try await client.shutdown()
        try await simulator.stop()
        await store.close()
    }
}
