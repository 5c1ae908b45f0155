import AuditTrail
import AuditTrailSQLite
import Foundation
import NotificationReceiver
import RetryEngine

// Tests open their stores on a SQLite file by path; the program wires a backend from `--db`.

extension NotificationStore {
    /// Opens (creating and migrating) the SQLite audit database at `path` for notifications,
    /// committing with `synchronous = FULL`.
    /// - Parameter startWriter: false holds the writer until ``startWriting()`` (tests fill the
    ///   queue first to see one commit take everything).
    public convenience init(
        path: String, startWriter: Bool = true, maximumPending: Int = defaultMaximumPending,
        keepRefusals: Duration? = defaultKeepRefusals, heartbeat: String? = nil, clock: ServiceClock = .system
    ) throws(NotificationStoreError) {
        let store: AuditStore
        do {
            store = try AuditStore(path: path, durable: true)
        } catch {
            throw NotificationStoreError(.open, "cannot open the notification store at \(path): \(error)")
        }
        self.init(backend: store, startWriter: startWriter, maximumPending: maximumPending, keepRefusals: keepRefusals, heartbeat: heartbeat, clock: clock)
    }
}

extension NotificationFollower {
    /// Follows the SQLite audit database at `path`, opened read-only.
    public convenience init(path: String) throws(NotificationStoreError) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw NotificationStoreError(.open, "no audit database at \(path): start `receiptdash receive --db \(path)` first")
        }
        do {
            self.init(backend: try AuditStore(readOnlyPath: path))
        } catch {
            throw NotificationStoreError(.open, "cannot open \(path) to follow its notifications: \(error)")
        }
    }
}

/// How tests open a trail read-only where the program would wire a backend (doctor): SQLite
/// files only.
public enum SQLiteTrails {
    public static let openReadOnly: @Sendable (AuditDatabase) async throws(AuditDatabaseError) -> any AuditBackend = {
        database throws(AuditDatabaseError) in
        guard case .sqlite(let path) = database else { throw AuditDatabaseError(.unavailable, "the tests open SQLite trails only") }
        do {
            return try AuditStore(readOnlyPath: path)
        } catch {
            throw AuditDatabaseError(.unavailable, "cannot open the audit database \(path): \(error)")
        }
    }
}
