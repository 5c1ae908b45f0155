import AuditTrail
import AuditTrailSQLite
import Foundation
import NotificationForwarder
import NotificationReceiver
import ServiceTestSupport
import TestSupport
import Testing
import UntrustedText

/// `notifications --outbox --enable` and `--replay`: what each says and whether the command
/// succeeded, on a real trail and a scripted downstream.
@Suite struct OutboxCommandsTests {
    static let uuid = "5b1a7e1c-0002-4d7e-9c1e-5f1f0a000002"

    func trail() async throws -> AuditStore {
        let path = TemporaryFolder("outbox").appending("audit.sqlite").path
        let backend = try AuditStore(path: path, durable: true)
        let store = NotificationStore(backend: backend).started()
        _ = try await store.append(
            NotificationRecord(
                notificationUUID: Self.uuid, version: .v2, notificationType: "DID_RENEW", receivedAt: Date(timeIntervalSince1970: 1_790_000_001),
                verdict: .test, originalTransactionID: "2000000900000001"))
        await store.close()
        return backend
    }

    @Test func replayWithoutATargetSaysWhereToQueueAndFails() async throws {
        let backend = try await trail()
        let capture = ConsoleCapture()
        let done = try await OutboxCommands.replay([Self.uuid], since: nil, to: nil, in: backend, now: Date(), console: capture.console())
        #expect(!done)
        #expect(capture.output == "")
        #expect(capture.error.hasPrefix("receiptdash: no forwarding target is registered in this audit trail"))
        #expect(try await backend.outbox(state: nil, limit: 10).isEmpty)
    }

    @Test func replayToATargetDeliversFromHereAndNamesUnknownUUIDs() async throws {
        let backend = try await trail()
        let downstream = ScriptedDownstream()
        let capture = ConsoleCapture()
        let configuration = Forwarder.Configuration(
            targets: [try ForwardTarget("https://hooks.example.com/apple")], secrets: [try WebhookSecret(ForwardDeliveryTests.secretText)])
        let done = try await OutboxCommands.replay(
            [Self.uuid, "0c1d2e3f-0000-4000-8000-00000000ffff"], since: nil, to: configuration, in: backend, transport: downstream, now: Date(),
            console: capture.console())
        #expect(!done, "an unknown UUID fails the command")
        #expect(capture.output == "queued 1 delivery to https://hooks.example.com/apple: 1 delivered\n")
        #expect(capture.error == "receiptdash: no notification 0c1d2e3f-0000-4000-8000-00000000ffff in the store\n")
        #expect(downstream.all.map(\.url) == ["https://hooks.example.com/apple"])
    }

    @Test func enablingAnUnknownTargetNamesTheRegisteredOnes() async throws {
        let backend = try await trail()
        try await backend.registerForwardTargets(["https://hooks.example.com/apple"], types: [], at: Date(timeIntervalSince1970: 1_790_000_000))
        let capture = ConsoleCapture()
        let enabled = try await OutboxCommands.enable(
            ["https://hooks.example.com/apple", "https://other.example.com/"], in: backend, console: capture.console())
        #expect(!enabled)
        #expect(
            capture.output
                == "forwarding to https://hooks.example.com/apple is enabled: its waiting deliveries go out with the receivers' next claims\n")
        #expect(
            capture.error
                == "receiptdash: https://other.example.com/ is not a registered forwarding target; registered: https://hooks.example.com/apple\n")
    }
}
