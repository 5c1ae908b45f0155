import ServiceLifecycle

/// An open audit store as a service of its command's `ServiceGroup`: it holds the store open
/// until the group shuts down (or is cancelled), then closes it (PostgreSQL: the pool and its
/// listener; SQLite: nothing to release). Listed first, it is shut down last, after the
/// services that write to it; and the command's process cannot end before the close has run.
public struct AuditStoreService: Service {
    public let store: any AuditBackend

    public init(_ store: any AuditBackend) {
        self.store = store
    }

    public func run() async {
        try? await gracefulShutdown()
        await store.close()
    }
}

extension AuditStoreService {
    /// Runs `body`, then closes `store` however `body` ended: an awaited close, never a task
    /// the process may exit before. For the commands that use a store for one piece of work
    /// rather than run a group.
    public static func closing<T>(_ store: (any AuditBackend)?, _ body: () async throws -> T) async throws -> T {
        let value: T
        do {
            value = try await body()
        } catch {
            await store?.close()
            throw error
        }
        await store?.close()
        return value
    }
}
