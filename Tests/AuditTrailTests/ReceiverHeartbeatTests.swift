@testable import AuditTrail
import Foundation
import Testing

/// A receiver's heartbeat on both backends: the newest beat per receiver is kept, newest first,
/// and receivers silent for a week are forgotten.
@Suite(.timeLimit(.minutes(2))) struct ReceiverHeartbeatTests {
    @Test(arguments: BackendKind.allCases) func heartbeatsKeepTheNewestPerReceiver(_ kind: BackendKind) async throws {
        try await TestAuditDatabase.with(kind) { db in
            let store = try await db.open()
            #expect(try await store.receiverHeartbeats().isEmpty)
            let start = 1_800_000_000.0
            _ = try await store.writeNotifications([
                .heartbeat(receiver: "old-host pid 7", at: Date(timeIntervalSince1970: start)),
                .heartbeat(receiver: "web-1 pid 42", at: Date(timeIntervalSince1970: start + 10)),
                .heartbeat(receiver: "web-1 pid 42", at: Date(timeIntervalSince1970: start + 20)),
            ])
            #expect(
                try await store.receiverHeartbeats() == [
                    ReceiverHeartbeat(receiver: "web-1 pid 42", at: Date(timeIntervalSince1970: start + 20)),
                    ReceiverHeartbeat(receiver: "old-host pid 7", at: Date(timeIntervalSince1970: start)),
                ])
            // A receiver silent for over a week is forgotten; one that beat two days in is kept.
            _ = try await store.writeNotifications([
                .heartbeat(receiver: "web-1 pid 42", at: Date(timeIntervalSince1970: start + 2 * 86_400)),
                .heartbeat(receiver: "web-2 pid 9", at: Date(timeIntervalSince1970: start + 8 * 86_400)),
            ])
            #expect(try await store.receiverHeartbeats().map(\.receiver) == ["web-2 pid 9", "web-1 pid 42"])
            await store.close()
        }
    }
}
