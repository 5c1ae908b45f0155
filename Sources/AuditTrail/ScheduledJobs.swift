import Foundation

/// A job that several processes on one store run on a schedule, but only one of them at a time
/// and once per period (`receive --reconcile-every`): on PostgreSQL under a transaction-level
/// advisory lock (`pg_try_advisory_xact_lock`), with the job's last end kept in
/// `receiptdash_job`, so a second receiver neither runs it beside the first nor again right
/// after it.
public protocol ScheduledJobs: Sendable {
    /// Runs `body` unless another process holds the job or finished it less than `every`
    /// seconds before `now`; returns nil when skipped. The body runs while the claim is held;
    /// its end time is recorded when it returns.
    func runJob<T: Sendable>(_ name: String, every: TimeInterval, now: @escaping @Sendable () -> Date, _ body: @escaping @Sendable () async -> T)
        async throws -> T?
}

extension AuditSchema {
    /// v11's job table: each scheduled job's last end.
    package static func jobTable(real: String) -> String {
        "CREATE TABLE receiptdash_job (name TEXT PRIMARY KEY, finished_at \(real) NOT NULL)"
    }

    /// A job that ended this long before its period is due again counts as done for the period
    /// (two receivers whose timers drift apart by seconds do not both run it).
    package static let jobSlack = 0.9
}
