import ServiceLifecycle

/// An open audit store as a service of its command's `ServiceGroup`: it runs the store
/// (PostgreSQL: its connection pool and listener, ``AuditBackend/run()``) until the group shuts
/// down or is cancelled, then closes it. Listed first, it is shut down last, after the services
/// that write to it; and the command's process cannot end before the close has run.
public struct AuditStoreService: Service {
    public let store: any AuditBackend

    public init(_ store: any AuditBackend) {
        self.store = store
    }

    public func run() async {
        let store = self.store
        await withDiscardingTaskGroup { group in
            group.addTask { await store.run() }
            try? await gracefulShutdown()
            await store.close()
        }
    }
}

extension AuditStoreService {
    /// Runs the store while `body` runs, then closes it however `body` ended, and returns once
    /// the store has stopped: for the commands that use a store for one piece of work rather
    /// than run a group. Nothing outlives the call.
    public static func closing<T>(_ store: (any AuditBackend)?, _ body: () async throws -> T) async throws -> T {
        try await closing(store.map { [$0] } ?? [], body)
    }

    /// ``closing(_:_:)`` for several stores at once.
    public static func closing<T>(_ stores: [any AuditBackend], _ body: () async throws -> T) async throws -> T {
        guard !stores.isEmpty else { return try await body() }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            for store in stores { group.addTask { await store.run() } }
            let value: T
            do {
                value = try await body()
            } catch {
                for store in stores { await store.close() }
                throw error
            }
            for store in stores { await store.close() }
            return value
        }
    }
}
