import APITestSupport
import AppStoreAPI
import AppStoreClients
import Foundation
import NotificationReceiver
import ReceiptCore
import ReceiptTrust
import ServiceTestSupport
import Testing
import TestSupport

/// Notification History paging is bounded by one page: against 100 pages of about 7 MB (the
/// endpoint says `hasMore` until the last), the client hands each page over before it asks for
/// the next, and `--reconcile --ingest` (the command's and the scheduled backfill's fold) takes
/// each page's missing notifications in as the page arrives and keeps only counts and the
/// missing ones without their payloads, with exact counts at the end.
@Suite struct HistoryPagingHoldsOnePageTests {
    let receivers = NotificationReceiverTests()

    /// A client on a loopback server answering `history`'s pages (production and sandbox alike).
    func withHistory(_ history: LargeNotificationHistory, _ body: (AppStoreServerAPIClient, ScriptedServer) async throws -> Void) async throws {
        let server = try await ScriptedServer.start { history.answer(query: $0.query) }
        let client = AppStoreServerAPIClient(
            credentials: makeTestCredentials().0, hosts: try APIHosts(production: server.baseURL + "/p", sandbox: server.baseURL + "/s"))
        do {
            try await body(client, server)
        } catch {
            try await client.shutdown()
            try await server.stop()
            throw error
        }
        try await client.shutdown()
        try await server.stop()
    }

    static let window = NotificationHistoryFilter(startDate: Date(timeIntervalSince1970: 1_789_000_000), endDate: Date(timeIntervalSince1970: 1_790_000_000))

    @Test func theClientHandsEachPageOverBeforeAskingForTheNext() async throws {
        let history = try LargeNotificationHistory(signer: TestNotifications())
        #expect(history.body(page: 0).utf8.count > 6_800_000)
        try await withHistory(history) { client, server in
            // The sink counts what it is handed; it keeps nothing of a page.
            var handed: [(requests: Int, items: Int, firstUUID: String?)] = []
            let answer = await client.notificationHistory(Self.window, environment: .sandbox) { page in
                handed.append((Self.pagesAsked(server), page.notificationHistory.count, page.notificationHistory.first.flatMap { Self.uuid($0.signedPayload) }))
            }
            #expect(answer.value == 100)
            #expect(answer.failure == nil)
            // Page k arrives when k + 1 pages were asked: one page at a time, no read-ahead.
            #expect(handed.map(\.requests) == Array(1...100))
            #expect(handed.allSatisfy { $0.items == LargeNotificationHistory.perPage })
            #expect(handed.map(\.firstUUID) == (0..<100).map { LargeNotificationHistory.missingUUID(page: $0) })
            // One record per request; a page asked again (a timeout on a loaded machine is retried)
            // is still one page.
            #expect(answer.records.count == server.requests.count)
            #expect(answer.records.filter { $0.result == .success(httpStatus: 200) }.count == 100)
            #expect(Self.pagesAsked(server) == 100)
            #expect(Self.asked(server) == [""] + (1..<100).map { "paginationToken=p\($0)" })
        }
    }

    @Test func reconcileAndIngestTakeEachPageInAndKeepOnlyCounts() async throws {
        let signer = try TestNotifications()
        let history = try LargeNotificationHistory(signer: signer)
        let store = try NotificationStore(path: receivers.temporaryPath()).started()
        let receiver = receivers.receiver(
            store, policy: .replaying(allowedBundleIDs: ["com.example.receiver"], anchors: try TrustAnchors.apple.addingTestRoots([signer.pki.rootDER])))
        try await withHistory(history) { client, server in
            var handed: [(requests: Int, missing: [String], payloads: Int)] = []
            var outcomes: [String] = []
            var stored = 0
            let report = await NotificationReconciler(client: client).reconcile(
                received: history.receivedUUIDs, filter: Self.window, environment: .sandbox,
                onMissing: { missing in
                    handed.append((Self.pagesAsked(server), missing.map(\.notificationUUID), missing.filter { !$0.signedPayload.isEmpty }.count))
                    let ingested = await HistoryBackfill.ingest(missing, receiver: receiver)
                    outcomes += ingested.map(\.outcome)
                    stored += ingested.filter(\.isStored).count
                })
            #expect(report.failure == nil)
            #expect(report.sent == 2_000)
            #expect(report.received == 1_900)
            #expect(report.missing.map(\.notificationUUID) == (0..<100).map { LargeNotificationHistory.missingUUID(page: $0) })
            #expect(report.missing.allSatisfy { $0.attempts.map(\.sendAttemptResult) == ["TIMED_OUT"] })
            // Each page's missing one was handed over with its payload before the next page was
            // asked for; the report keeps none of the payloads.
            #expect(handed.map(\.requests) == Array(1...100))
            #expect(handed.map(\.missing) == (0..<100).map { [LargeNotificationHistory.missingUUID(page: $0)] })
            #expect(handed.allSatisfy { $0.payloads == 1 })
            #expect(report.missing.allSatisfy { $0.signedPayload.isEmpty })
            #expect(report.records.count == server.requests.count)
            #expect(report.records.filter { $0.result == .success(httpStatus: 200) }.count == 100)
            #expect(outcomes == Array(repeating: "accepted", count: 100))
            #expect(stored == 100)
        }
        #expect(try await store.notifications().map(\.record.notificationUUID).sorted() == (0..<100).map { LargeNotificationHistory.missingUUID(page: $0) })
        await store.close()
    }

    /// The queries the server was asked, a page asked again (the client's retry) once.
    static func asked(_ server: ScriptedServer) -> [String] {
        server.requests.map(\.query).reduce(into: []) { pages, query in
            if pages.last != query { pages.append(query) }
        }
    }

    /// How many distinct pages the server was asked for so far.
    static func pagesAsked(_ server: ScriptedServer) -> Int { asked(server).count }

    /// The notificationUUID of a history item (the test reads it as the reconciler does).
    static func uuid(_ signedPayload: String) -> String? {
        (try? ReceiptDecoder().decode(text: signedPayload))?.notification?.notificationUUID
    }
}
