import APITestSupport
import AppStoreAPI
import AppStoreClients
import AuditTrail
import AuditTrailSQLite
import Dashboard
import DashboardLive
import Foundation
import ReceiptCore
import ReceiptSimulator
import ReceiptTrust
import ReceiptWatch
import TerminalUI
import Testing
import UntrustedText
import TestSupport

/// One gate for every write: the same extension on customer data that is not genuine (the
/// simulator's test chain, its root not given) goes through the command's door
/// (`ActionSession`, what `receiptdash extend` runs) and the dashboard's (the `x` form and
/// its adapter). Both refuse it with `untrusted-data` and record nothing; told to go ahead
/// (`--force-untrusted`, `F`), both send it and record the same plan, its data line saying so.
@Suite(.timeLimit(.minutes(2))) struct OneWriteGateTests {
    static let original = "2000000900000001"

    @Test func aWriteOnDataThatIsNotGenuineIsRefusedAlikeThroughEveryDoor() async throws {
        let words = Wording("one-write-gate", matching: Wording.runVariables)
        let (credentials, key) = makeTestCredentials(bundleID: ServerAPIData.demoBundleID)
        let simulator = try await ServerAPISimulator.start(ServerAPIConfiguration(publicKey: key.publicKey))
        // Apple's roots only: the simulator's items are judged invalid.
        let pipeline = ReceiptPipeline(at: Date(), evaluator: TrustEvaluator(anchors: .apple))
        let folder = TemporaryFolder("one-gate").path
        let store = try AuditStore(path: folder + "/audit.sqlite")
        func client() throws -> AppStoreServerAPIClient {
            AppStoreServerAPIClient(credentials: credentials, hosts: try simulator.hosts, requestTimeout: .seconds(60))
        }

        // The command's door.
        func command(force: Bool, requestID: String) async throws -> (ActionSession.Exit, String) {
            let capture = ConsoleCapture()
            var session = ActionSession(
                action: .extend, ids: ActionIDs(originalTransactionID: Self.original), selection: .production, format: .json, requestID: requestID,
                console: capture.console())
            session.yes = true
            session.extendDays = 3
            session.forceUntrusted = force
            session.recording = .audit(store)
            let request = try APIRequest.extendRenewalDate(
                Self.original, try ExtendRenewalDateBody(days: 3, reason: .serviceIssue, requestIdentifier: requestID))
            let exit = await session.run(request, client: try client(), pipeline: pipeline)
            return (exit, capture.output)
        }
        let (refusedExit, refusedOutput) = try await command(force: false, requestID: "door-cli-1")
        #expect(refusedExit == .failed)
        let cliError = (try JSONSerialization.jsonObject(with: Data(refusedOutput.utf8)) as? [String: Any])?["error"] as? [String: Any]
        #expect(cliError?["code"] as? String == "untrusted-data")

        // The dashboard's door: the form shows the data line, y is refused with the same code
        // (a pop-up says it), and the adapter refuses the same order as well.
        let dashboardClient = try client()
        var state = DashboardState(now: Date())
        _ = state.handle(.resize(width: 140, height: 42))
        state.lookupAvailable = true
        state.actionsAvailable = true
        state.add(await CustomerLookupService(client: dashboardClient, pipeline: pipeline).lookUp(.orderID("MQ5X7ABCDE")))
        state.focus = .subscriptions
        _ = state.handle(.character("x"))
        for key: KeyEvent in [.character("3"), .enter] { _ = state.handle(key) }
        guard case .extendForm(let form) = state.mode, form.confirming else {
            Issue.record("the form did not reach its plan: \(state.mode)")
            try await dashboardClient.shutdown()
            try await simulator.stop()
            return
        }
        #expect(form.plan.contains("data: INVALID (not genuine)"))
        words.said(overlayLines(DashboardView.render(state, width: 140, height: 42).text, titled: "Extend renewal date"))
        #expect(state.handle(.character("y")).isEmpty)
        #expect(state.popup?.title == "Not sent (untrusted-data)")
        words.said(state.popup?.lines ?? [])
        _ = state.handle(.escape)  // closes the pop-up; the plan is still open
        guard case .extendForm = state.mode else {
            Issue.record("the plan closed: \(state.mode)")
            try await dashboardClient.shutdown()
            try await simulator.stop()
            return
        }
        let adapter = ServiceActions(actions: CustomerActions(client: dashboardClient, pipeline: pipeline), store: store)
        let unforced = ExtendOrder(
            originalTransactionID: Self.original, productID: nil, days: 3, reason: .serviceIssue, requestID: "door-dash-1", environment: .production,
            query: .orderID("MQ5X7ABCDE"))
        let refused = await adapter.extend(unforced)
        #expect(!refused.ok)
        #expect(refused.code == "untrusted-data")
        #expect(try await store.actions(AuditActionQuery(transactionID: Self.original)).isEmpty)
        #expect(simulator.service.writes.isEmpty)

        // Told to go ahead: F on the plan, --force-untrusted on the command line.
        let effects = state.handle(.character("F"))
        guard effects.count == 1, case .extend(let forcedOrder) = effects[0] else {
            Issue.record("F gave \(effects)")
            try await dashboardClient.shutdown()
            try await simulator.stop()
            return
        }
        #expect(forcedOrder.forceUntrusted)
        let taken = await adapter.extend(forcedOrder)
        #expect(taken.ok, "\(taken.line)")
        let (forcedExit, _) = try await command(force: true, requestID: "door-cli-2")
        #expect(forcedExit == .done)

        let rows = try await store.actions(AuditActionQuery(transactionID: Self.original))
        #expect(rows.count == 2)
        #expect(rows.map(\.result) == ["success", "success"])
        #expect(Set(rows.compactMap(\.requestID)) == [forcedOrder.requestID, "door-cli-2"])
        // The same plan, whichever door: only the request id differs, and the expiry (the
        // second extension starts where the first ended).
        #expect(rows.allSatisfy { ($0.plan ?? "").contains("(+3 days)") })
        let plans = rows.map {
            ($0.plan ?? "").replacingOccurrences(of: $0.requestID ?? "", with: "ID").split(separator: "\n").filter { !$0.hasPrefix("  expires ") }
        }
        #expect(plans.count == 2 && plans[0] == plans[1], "\(plans)")
        words.said(plans.first ?? [])
        #expect(simulator.service.writes.count == 2)

        try await dashboardClient.shutdown()
        try await simulator.stop()
        words.check()
        await store.close()
    }
}
