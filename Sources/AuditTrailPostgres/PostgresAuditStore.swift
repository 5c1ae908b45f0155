import AuditTrail
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PlainWords
import PostgresNIO
import RetryEngine
import Synchronization
import _ConnectionPoolModule

/// The audit trail on a team's PostgreSQL (`--db postgres://USER@HOST:PORT/DATABASE`): the same
/// tables and meaning as the SQLite ``AuditStore``, for several validators, receivers and
/// dashboards on several hosts at once.
///
/// - **A service.** One `PostgresClient` (PostgresNIO's pool), run by the store's ``run()`` in
///   the command's service group (``AuditStoreService``), with the `LISTEN` connection beside
///   it: no task of the store outlives its caller. Every value reaches the server as a bind.
///   Opening (the check and the migrations) uses a connection of its own, so a store can be
///   opened before its group starts.
/// - **Migrations** (``PostgresAuditSchema``) run at open, once, under an advisory lock; a
///   read-only open never migrates and refuses a database that is missing or older.
/// - **Concurrent writers.** Uniqueness is the database's: receipts are upserted on
///   `content_hash` (`ON CONFLICT … DO UPDATE … RETURNING id, (xmax = 0)`), notifications on
///   `notification_uuid`. Two validators that see one receipt make one row with two sightings.
///   A deadlock or serialization failure is retried.
/// - **Followers.** Identity values are taken at insert, so with several writers a lower id can
///   commit after a higher one. Each feed (`receipts(after:)`, `results(after:)`,
///   `followNotifications`) reads in one snapshot and remembers it with the cursor it hands
///   back; the next call with that cursor also returns the rows written by transactions that
///   were still running in that snapshot (`pg_visible_in_snapshot` on the row's writing
///   transaction, column `*_xid`). Nothing is skipped, and a row comes back at most once more
///   (callers replace a row they already have).
/// - **LISTEN/NOTIFY.** Every write transaction calls `pg_notify('receiptdash_audit', '')`,
///   which fires at commit; ``changes()`` streams a wake-up per commit from a dedicated
///   connection's `LISTEN`, reconnecting with backoff (and waking once after each reconnect).
/// - **Connection loss.** A write that fails because the server is unreachable or restarting
///   is retried with backoff for up to ``writeRetryBudget`` (30 s), then fails with a clear
///   error. A write whose `COMMIT` got no answer is reported as of unknown outcome, never
///   silently retried. ``isWritable()`` answers false while the server cannot commit.
public final class PostgresAuditStore: AuditBackend {
    /// The channel writers notify and followers listen on.
    static let channel = "receiptdash_audit"

    public let postgresLocation: PostgresLocation
    public var location: String { postgresLocation.description }
    public let readOnly: Bool
    /// How long a write keeps retrying while the server is unreachable.
    let writeRetryBudget: Duration
    /// How long a read keeps retrying (a pooled connection that died with a restart).
    let readRetryBudget: Duration

    let configuration: PostgresClient.Configuration
    let connectTimeout: Duration
    /// What the retries between tries wait on.
    let clock: any Clock<Duration>
    let logger: Logger
    private let state: Mutex<State>
    private let applied = Mutex<[String]>([])
    /// The migrations this open applied (empty when the database was at the current schema).
    public var migrationsApplied: [String] { applied.withLock { $0 } }
    /// Every migration's name, oldest first: the last is the current schema.
    public var schemaVersions: [String] { PostgresAuditSchema.names }
    /// Not told by a read-only open (it runs no migration).
    public func missingMigrations() throws -> [String]? { nil }
    /// PostgreSQL's commits are durable anyway (`synchronous_commit` on).
    public func synchronousMode() throws -> Int { -1 }

    struct State {
        var closed = false
        /// ``run()`` has started the pool.
        var running = false
        var subscribers: [Int: AsyncStream<Void>.Continuation] = [:]
        var nextSubscriber = 0
        /// Snapshots read by the feeds, by the cursor handed back (see the type's notes).
        var receiptSnapshots: [(Int64, String)] = []
        var resultSnapshots: [(Double, String)] = []
        var notificationSnapshots: [(NotificationMarks, String)] = []
    }

    /// The pool (run by ``run()``).
    let client: PostgresClient
    /// Finished by ``close()``: ends ``run()``.
    private let stopped = AsyncStream.makeStream(of: Void.self)
    /// A wake-up when the first follower asks for ``changes()``: the `LISTEN` connection opens then.
    private let listenWanted = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))

    /// Opens (migrating, unless `readOnly`) the audit trail at `location`.
    public static func open(_ location: PostgresLocation, readOnly: Bool) async throws(AuditDatabaseError) -> any AuditBackend {
        try await PostgresAuditStore(location: location, readOnly: readOnly)
    }

    /// - Parameters:
    ///   - writeRetryBudget: how long writes retry while the server is unreachable.
    ///   - connectTimeout: how long one connection attempt may take.
    public init(
        location: PostgresLocation, readOnly: Bool = false, writeRetryBudget: Duration = .seconds(30),
        connectTimeout: Duration = .seconds(5), clock: any Clock<Duration> = ContinuousClock()
    ) async throws(AuditDatabaseError) {
        postgresLocation = location
        self.clock = clock
        self.readOnly = readOnly
        self.writeRetryBudget = writeRetryBudget
        readRetryBudget = min(writeRetryBudget, .seconds(3))
        logger = Logger(label: "receiptdash.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.user, password: location.passwordValue,
            database: location.database, tls: try Self.tls(location))
        configuration.options.connectTimeout = connectTimeout
        configuration.options.maximumConnections = 20
        configuration.options.connectionIdleTimeout = .seconds(60)
        if readOnly { configuration.options.additionalStartupParameters = [("default_transaction_read_only", "on")] }
        self.configuration = configuration
        self.connectTimeout = connectTimeout
        client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        state = Mutex(State())

        let logger = self.logger
        // A certificate nobody trusts, a refused password or a server that is not there is said
        // at once, not after the pool's lease timeout: the open's own connection names the cause
        // (a refused connection is not retried at open: nothing listens there; a server that
        // goes away later is retried by each statement). The check and the migrations run on it.
        let connection = CheckedConnection(connection: try await openingConnection())
        do {
            let names: [String]
            if readOnly {
                let missing = try await PostgresAuditSchema.missing(connection, logger: logger)
                if missing.count == PostgresAuditSchema.names.count {
                    throw AuditDatabaseError(
                        .unavailable,
                        "\(location) holds no audit trail yet: run `receiptdash db migrate --db \(location)` or start a writer first")
                } else if !missing.isEmpty {
                    throw AuditDatabaseError(
                        .unavailable,
                        "the audit trail at \(location) is older than this receiptdash (missing migrations \(missing.joined(separator: ", "))): "
                            + "run `receiptdash db migrate --db \(location)`")
                }
                names = []
            } else {
                names = try await PostgresAuditSchema.migrate(connection, logger: logger)
            }
            try? await connection.close()
            applied.withLock { $0 = names }
        } catch {
            try? await connection.close()
            await close()
            if let error = error as? AuditDatabaseError { throw error }
            throw AuditDatabaseError(
                .unavailable, "cannot open the audit trail at \(location): \(Self.describe(error, password: location.passwordValue, location: location))")
        }
    }

    /// The open's own connection, tried again for a while when the server is starting or busy
    /// (up to the connect timeout and a second); a permanent problem or a refused connection
    /// fails at once.
    private func openingConnection() async throws(AuditDatabaseError) -> PostgresConnection {
        let what = "cannot open the audit trail at \(location)"
        let retrier = retrier(budget: connectTimeout + .seconds(1))
        var last = ""
        let end = try await retrier.run { (_) throws(AuditDatabaseError) -> AttemptStep<PostgresConnection> in
            switch await self.connect() {
            case .success(let connection):
                return .done(connection)
            case .failure(let problem):
                if problem.permanent || problem.unreachable { throw AuditDatabaseError(.unavailable, "\(what): \(problem.words)") }
                last = problem.words
                return .retry()
            }
        }
        switch end {
        case .done(let connection): return connection
        case .cancelled: throw AuditDatabaseError(.unavailable, "\(what): cancelled")
        case .gaveUp: throw AuditDatabaseError(.unavailable, "\(what): \(last)")
        }
    }

    /// The store's retries: backoff from 50 ms doubling to 2 s, no jitter, as many tries as fit
    /// in `budget`, on the store's clock.
    private func retrier(budget: Duration) -> Retrier {
        Retrier(policy: RetryPolicy(maximumRetries: .max, baseDelay: 0.05, maximumDelay: 2, totalBudget: budget.seconds, jitter: 0), clock: clock)
    }

    /// Runs the store's connection pool, and its `LISTEN` connection once a follower asks for
    /// ``changes()``, until ``close()`` or until the task is cancelled (then every connection is
    /// closed). The store's statements wait for it: a command runs it in its service group
    /// (``AuditStoreService``). Runs once; returns at once on a closed store.
    public func run() async {
        let start = state.withLock { s -> Bool in
            guard !s.closed, !s.running else { return false }
            s.running = true
            return true
        }
        guard start else { return }
        let client = self.client
        await withDiscardingTaskGroup { group in
            group.addTask { await client.run() }
            group.addTask {
                for await _ in self.listenWanted.stream {
                    await self.listen()
                    return
                }
            }
            for await _ in stopped.stream {}
            group.cancelAll()
        }
    }

    /// `sslmode=disable` → plain (loopback only, checked by the parser); `require` and
    /// `verify-full` → TLS with the certificate and host name verified, `sslrootcert` trusted
    /// besides the system's roots.
    static func tls(_ location: PostgresLocation) throws(AuditDatabaseError) -> PostgresClient.Configuration.TLS {
        try tlsConfiguration(location).map { .require($0) } ?? .disable
    }

    /// The TLS settings for `location`, nil for plain text.
    static func tlsConfiguration(_ location: PostgresLocation) throws(AuditDatabaseError) -> TLSConfiguration? {
        switch location.tls {
        case .disable:
            return nil
        case .require, .verifyFull:
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.certificateVerification = .fullVerification
            if let root = location.rootCertificate {
                guard FileManager.default.isReadableFile(atPath: root) else {
                    throw AuditDatabaseError(.invalidLocation, "sslrootcert \(root) is not a readable file")
                }
                tls.additionalTrustRoots = [.file(root)]
            }
            return tls
        }
    }

    /// Why the pool leased no connection in time. PostgresNIO's pool keeps a failed connection
    /// attempt's error to itself and tries again, so a certificate nobody trusts or a refused
    /// password would read as "no connection within 5 s". One direct connection with the same
    /// settings names the cause; `permanent` when trying again cannot help (TLS verification,
    /// authentication, a database that does not exist). Nil when it connects or finds nothing.
    /// `unreachable` when nothing answered at that address (refused, a name that does not
    /// resolve).
    func connectionProblem() async -> Problem? {
        switch await connect() {
        case .success(let connection):
            try? await connection.close()
            return nil
        case .failure(let problem):
            return problem
        }
    }

    /// Why a connection could not be made, in words; `permanent` and `unreachable` as in
    /// ``connectionProblem()``.
    struct Problem: Error {
        var words: String
        var permanent: Bool
        var unreachable: Bool
    }

    /// One connection of its own (outside the pool) with the store's settings.
    func connect() async -> Result<PostgresConnection, Problem> {
        let location = postgresLocation
        let connection: PostgresConnection.Configuration.TLS
        do {
            connection = try Self.tlsConfiguration(location).map { .require(try NIOSSLContext(configuration: $0)) } ?? .disable
        } catch {
            return .failure(Problem(words: Self.describe(error, password: location.passwordValue, location: location), permanent: true, unreachable: false))
        }
        var configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.user, password: location.passwordValue,
            database: location.database, tls: connection)
        configuration.options.connectTimeout = TimeAmount(connectTimeout)
        do {
            return .success(try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger))
        } catch {
            return .failure(
                Problem(
                    words: Self.describe(error, password: location.passwordValue, location: location), permanent: Self.isPermanent(error),
                    unreachable: Self.isUnreachable(error)))
        }
    }

    /// Nothing listens at the address (the connection was refused) or the host name does not
    /// resolve.
    static func isUnreachable(_ error: any Error) -> Bool {
        let underlying = (error as? PSQLError).flatMap { $0.code == .connectionError ? $0.underlying : nil } ?? error
        if let error = underlying as? NIOConnectionError {
            if error.connectionErrors.isEmpty { return error.dnsAError != nil || error.dnsAAAAError != nil }
            return error.connectionErrors.allSatisfy { ($0.error as? IOError)?.errnoCode == ECONNREFUSED }
        }
        return (underlying as? IOError)?.errnoCode == ECONNREFUSED
    }

    /// Errors of a connection attempt that the same attempt would meet again.
    static func isPermanent(_ error: any Error) -> Bool {
        func isTLS(_ error: (any Error)?) -> Bool { error is NIOSSLError || error is NIOSSLExtraError }
        guard let error = error as? PSQLError else { return isTLS(error) }
        switch error.code {
        case .server:
            // Class 28: invalid authorization (a password refused, no pg_hba entry); 3D000: no such database.
            guard let state = sqlState(error) else { return false }
            return state.isInClass(of: .invalidAuthorizationSpecification) || state == .invalidCatalogName
        case .sslUnsupported, .authMechanismRequiresPassword, .unsupportedAuthMechanism, .saslError:
            return true
        case .connectionError, .failedToAddSSLHandler:
            return isTLS(error.underlying)
        default:
            return false
        }
    }

    // MARK: - Running statements

    /// Runs `body` on a pooled connection, in a transaction when `transaction` names its BEGIN,
    /// retrying what a restart or an outage makes fail (writes for ``writeRetryBudget``).
    /// Errors come out as ``AuditDatabaseError`` in plain words, never with the password.
    func run<T: Sendable>(
        _ what: String, write: Bool, transaction: PostgresQuery? = nil, budget: Duration? = nil,
        _ body: @escaping @Sendable (CheckedConnection) async throws -> T
    ) async throws(AuditDatabaseError) -> T {
        if write, readOnly {
            throw AuditDatabaseError(.refused, "\(what): \(location) was opened read-only (a follower never writes)")
        }
        if state.withLock({ $0.closed }) { throw AuditDatabaseError(.unavailable, "\(what): the audit store is closed") }
        let retrier = retrier(budget: budget ?? (write ? writeRetryBudget : readRetryBudget))
        var last: (kind: Failure, words: String)?
        let logger = self.logger
        let end = try await retrier.run { (attempt) throws(AuditDatabaseError) -> AttemptStep<T> in
            let progress = AttemptProgress()
            let client = self.client
            // Waiting for a connection is bounded (the pool would wait up to a minute); a
            // statement already running is not interrupted.
            let leaseLimit = max(min(connectTimeout + .seconds(1), .seconds(attempt.remaining)), .milliseconds(100))
            do {
                return .done(
                    try await Self.withLeaseLimit(leaseLimit, progress: progress, clock: clock) {
                        try await client.withConnection { pooled in
                            // A lease granted after the attempt was given up runs nothing: the
                            // retry that follows must not meet a twin of its own write.
                            guard progress.leased() else { throw CancellationError() }
                            let connection = CheckedConnection(connection: pooled)
                            guard let begin = transaction else { return try await body(connection) }
                            try await connection.query(begin, logger: logger)
                            do {
                                let value = try await body(connection)
                                progress.committing()
                                try await connection.query("COMMIT", logger: logger)
                                return value
                            } catch {
                                if !progress.isCommitting { _ = try? await connection.query("ROLLBACK", logger: logger) }
                                throw error
                            }
                        }
                    })
            } catch {
                if let error = error as? AuditDatabaseError { throw error }
                let committing = progress.isCommitting
                var kind = Self.classify(error)
                // A pool being replaced refuses new work: the next try takes the new one.
                if kind == .closed, !state.withLock({ $0.closed }) { kind = .connection }
                var words = Self.describe(error, password: postgresLocation.passwordValue, location: postgresLocation)
                if error is LeaseTimeout {
                    if !state.withLock({ $0.running }) {
                        throw AuditDatabaseError(
                            .unavailable, "\(what): the audit store is not running (its service was never started: run it with AuditStoreService)")
                    }
                    if let problem = await connectionProblem() {
                        words = problem.words
                        if problem.permanent { throw AuditDatabaseError(.unavailable, "\(what): \(problem.words)") }
                    }
                }
                if committing, kind == .connection {
                    throw AuditDatabaseError(
                        .unavailable,
                        "\(what): the connection to \(location) was lost during the commit, so whether it was recorded is unknown (\(words))")
                }
                switch kind {
                case .cancelled:
                    throw AuditDatabaseError(.unavailable, "\(what): cancelled")
                case .refused:
                    throw AuditDatabaseError(.refused, "\(what): \(words)")
                case .closed:
                    throw AuditDatabaseError(.unavailable, "\(what): the audit store is closed")
                case .connection, .conflict:
                    last = (kind, words)
                    return .retry()
                }
            }
        }
        switch end {
        case .done(let value):
            return value
        case .cancelled:
            throw AuditDatabaseError(.unavailable, "\(what): cancelled")
        case .gaveUp(let giveUp):
            let (kind, words) = last!
            let reason = kind == .conflict ? "kept conflicting with other writers" : "cannot reach \(location)"
            let tries = giveUp.attempts
            throw AuditDatabaseError(.unavailable, "\(what): \(reason) after \(CountNoun.try.count(tries)) (\(words))")
        }
    }

    /// A write transaction that wakes followers when it commits.
    func write<T: Sendable>(_ what: String, _ body: @escaping @Sendable (CheckedConnection) async throws -> T) async throws(AuditDatabaseError) -> T {
        let logger = self.logger
        return try await run(what, write: true, transaction: "BEGIN") { connection in
            let value = try await body(connection)
            try await connection.query("SELECT pg_notify(\(Self.channel), '')", logger: logger)
            return value
        }
    }

    /// Reads, retried once or twice if a pooled connection went away.
    func read<T: Sendable>(_ what: String, _ body: @escaping @Sendable (CheckedConnection) async throws -> T) async throws(AuditDatabaseError) -> T {
        try await run(what, write: false, body)
    }

    /// Reads in one snapshot (a follower's feed: the snapshot it read is remembered).
    func readSnapshot<T: Sendable>(_ what: String, _ body: @escaping @Sendable (CheckedConnection) async throws -> T) async throws(AuditDatabaseError) -> T {
        try await run(what, write: false, transaction: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", body)
    }

    /// How far one attempt got: a connection leased, a COMMIT sent.
    final class AttemptProgress: Sendable {
        private let state = Mutex<(leased: Bool, committing: Bool, abandoned: Bool)>((false, false, false))
        /// Records the lease; false when the attempt was already given up (run nothing then).
        func leased() -> Bool {
            state.withLock { s in
                guard !s.abandoned else { return false }
                s.leased = true
                return true
            }
        }
        /// Gives the attempt up if it has no connection yet; true when it was given up.
        func abandonUnlessLeased() -> Bool {
            state.withLock { s in
                guard !s.leased else { return false }
                s.abandoned = true
                return true
            }
        }
        func committing() { state.withLock { $0.committing = true } }
        var isCommitting: Bool { state.withLock { $0.committing } }
    }

    /// Runs `attempt`, giving it up (cancelled, ``LeaseTimeout``) if it has leased no connection
    /// within `limit` on the store's injected clock: a test drives the limit without waiting.
    /// A leased attempt runs to its end; the lease's cancellation is PostgresNIO's (the pool
    /// drops the request). Everything runs in this task's group: nothing outlives the call.
    static func withLeaseLimit<T: Sendable>(
        _ limit: Duration, progress: AttemptProgress, clock: any Clock<Duration>, _ attempt: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: LeaseStep<T>.self) { group in
            group.addTask { .answered(try await attempt()) }
            group.addTask {
                try await clock.sleep(for: limit)
                if progress.abandonUnlessLeased() { throw LeaseTimeout(limit: limit) }
                return .leasedInTime
            }
            while let step = try await group.next() {
                if case .answered(let value) = step {
                    group.cancelAll()
                    return value
                }
            }
            throw CancellationError()
        }
    }

    /// What ends first in ``withLeaseLimit(_:progress:clock:_:)``: the attempt's answer, or the
    /// limit with a connection leased (the statement then runs on).
    enum LeaseStep<T: Sendable>: Sendable {
        case answered(T)
        case leasedInTime
    }

    /// No connection could be leased in time (the server is away).
    struct LeaseTimeout: Error, CustomStringConvertible {
        var limit: Duration
        var description: String { "no connection within \(limit.components.seconds) s" }
    }

    enum Failure: Equatable {
        /// The server is unreachable, restarting or failing over: worth retrying.
        case connection
        /// A deadlock or serialization failure with another writer: retry the transaction.
        case conflict
        /// The statement was refused (a constraint, a type, a missing table): retrying won't help.
        case refused
        case cancelled
        case closed
    }

    static func classify(_ error: any Error) -> Failure {
        if error is CancellationError { return .cancelled }
        if error is LeaseTimeout || error is ConnectionLost { return .connection }
        if let pool = poolError(error) {
            switch pool {
            case .poolShutdown: return .closed
            case .requestCancelled: return .cancelled
            default: return .connection
            }
        }
        if let error = error as? PSQLError {
            switch error.code {
            case .server:
                guard let state = sqlState(error) else { return .refused }
                if state == .serializationFailure || state == .deadlockDetected { return .conflict }
                // Class 08: connection exception; 57P01-03: shutting down, crashed, starting up;
                // 53300: too many connections; 25006: read-only (a standby mid-failover).
                if state.isInClass(of: .connectionException) || Self.unavailableStates.contains(state) { return .connection }
                return .refused
            case .poolClosed: return .closed
            case .queryCancelled: return .cancelled
            case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .sslUnsupported,
                .failedToAddSSLHandler:
                return .connection
            default:
                return .refused
            }
        }
        if error is IOError || error is ChannelError { return .connection }
        return .refused
    }

    /// An error in words: the server's message and SQL state, or what went wrong with the
    /// connection. The password never appears (masked if anything echoes it).
    package static func describe(_ error: any Error, password: String?, location: PostgresLocation? = nil) -> String {
        let server = location.map { "\($0.host.contains(":") ? "[\($0.host)]" : $0.host):\($0.port)" }
        var text: String
        if let error = error as? AuditDatabaseError {
            text = error.reason
        } else if let error = error as? LeaseTimeout {
            text = error.description
        } else if let error = error as? ConnectionLost {
            text = error.description
        } else if let error = error as? PSQLError {
            switch error.code {
            case .server:
                let info = error.serverInfo
                let state = sqlState(error)
                let user = location?.user ?? "this user"
                if state == .invalidPassword {
                    text = "password authentication failed for user \(user): check the password (PGPASSWORD, ~/.pgpass or PGPASSFILE)"
                } else if state?.isInClass(of: .invalidAuthorizationSpecification) == true {
                    text = "the server refused user \(user)"
                        + (info?[.message].map { " (\($0))" } ?? "")
                        + ": check the user name, or ask the database's administrator for access (pg_hba.conf)"
                } else if state == .invalidCatalogName, let location {
                    text = "the database \(location.database) does not exist on \(server ?? location.host): create it (createdb \(location.database)) or fix the name in --db"
                } else {
                    text = info?[.message] ?? "the server refused the statement"
                    if let detail = info?[.detail] { text += " (\(detail))" }
                    if let state, !state.raw.isEmpty { text += " [SQLSTATE \(state.raw)]" }
                }
            case .connectionError:
                text = "cannot connect" + (server.map { " to \($0)" } ?? "") + (error.underlying.map { ": \(plain($0))" } ?? "")
            case .serverClosedConnection:
                text = "the server closed the connection"
            case .clientClosedConnection, .poolClosed:
                text = "the connection was closed"
            case .uncleanShutdown:
                text = "the connection ended uncleanly"
            case .sslUnsupported:
                text = "the server\(server.map { " at \($0)" } ?? "") does not offer TLS: turn TLS on there, or (on loopback only) use sslmode=disable"
            case .failedToAddSSLHandler:
                text = "TLS failed" + (server.map { " with \($0)" } ?? "") + (error.underlying.map { ": \(plain($0))" } ?? "")
            case .authMechanismRequiresPassword:
                text = "the server asks for a password and none was given (PGPASSWORD, ~/.pgpass or the URL)"
            case .unsupportedAuthMechanism:
                text = "the server asks for an authentication method PostgresNIO does not support"
            case .saslError:
                text = "authentication failed (SCRAM)"
            case .queryCancelled:
                text = "the query was cancelled"
            default:
                text = "the PostgreSQL client failed (\(error.code))" + (error.underlying.map { ": \(plain($0))" } ?? "")
            }
        } else if let pool = poolError(error) {
            text = pool == .connectionCreationCircuitBreakerTripped
                ? "no connection could be made" + (server.map { " to \($0)" } ?? "")
                : pool == .poolShutdown ? "the connection pool is closed" : "the request for a connection was cancelled"
        } else {
            text = plain(error)
        }
        if let password, !password.isEmpty { text = text.replacingOccurrences(of: password, with: "****") }
        return text
    }

    /// PostgresNIO's pool error (`connectionCreationCircuitBreakerTripped`, `poolShutdown`,
    /// `requestCancelled`), compared by value. It is public only in PostgresNIO's
    /// underscored `_ConnectionPoolModule` product (not a stable API: a PostgresNIO update may
    /// move it). The client maps `poolShutdown` and `requestCancelled` to `PSQLError` where it
    /// can, the circuit breaker never.
    private static func poolError(_ error: any Error) -> ConnectionPoolError? { error as? ConnectionPoolError }

    /// A server error's SQLSTATE, as PostgresNIO names them.
    static func sqlState(_ error: PSQLError) -> PostgresError.Code? {
        error.serverInfo?[.sqlState].map(PostgresError.Code.init(raw:))
    }

    /// SQLSTATEs outside class 08 that mean the server is away for now: shutting down, crashed,
    /// starting up, too many connections, read-only (a standby mid-failover).
    static let unavailableStates: [PostgresError.Code] = [
        .adminShutdown, .crashShutdown, .cannotConnectNow, .tooManyConnections, .readOnlySqlTransaction,
    ]

    /// Whether a TLS failure is BoringSSL's CERTIFICATE_VERIFY_FAILED. NIOSSL keeps BoringSSL's
    /// packed error code private (`BoringSSLInternalError` shows it only in its description),
    /// so the reason's name in the handshake's error stack is the narrowest test there is.
    static func isCertificateVerifyFailure(_ error: NIOSSLError) -> Bool {
        switch error {
        case .handshakeFailed(.sslError(let stack)), .handshakeFailed(.unknownError(let stack)):
            return stack.contains { $0.description.contains("CERTIFICATE_VERIFY_FAILED") }
        default:
            return false
        }
    }

    private static func plain(_ error: any Error) -> String {
        let text = String(describing: error)
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return "the server's TLS certificate does not name this host: connect by a name the certificate holds"
        }
        if let ssl = error as? NIOSSLError, isCertificateVerifyFailure(ssl) {
            return "the server's TLS certificate is not signed by a CA this machine trusts: add sslrootcert=FILE (the server's CA, PEM) to --db"
        }
        if error is NIOSSLError || error is NIOSSLExtraError || error is BoringSSLError {
            return "the TLS handshake failed: check the server's TLS set-up and sslmode in --db"
        }
        if let error = error as? NIOConnectionError {
            if error.connectionErrors.isEmpty {
                return error.dnsAError != nil || error.dnsAAAAError != nil
                    ? "the host name \(error.host) does not resolve: check it" : "no address to connect to"
            }
            let reasons = Set(error.connectionErrors.map { plain($0.error) })
            return reasons.sorted().joined(separator: "; ")
        }
        if let error = error as? IOError { return errnoWords(error.errnoCode) }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout: return "no answer in time: is the host reachable and the port right?"
            default: return "the connection failed"
            }
        }
        if error is CancellationError { return "cancelled" }
        // Anything else: its text with no type dump (`Type(field: …)` keeps only its words).
        return text.contains("(") ? "the connection failed" : text
    }

    /// A socket error in words, with what to do about the common ones.
    static func errnoWords(_ code: Int32) -> String {
        switch code {
        case ECONNREFUSED: return "connection refused (is the server running?)"
        case ETIMEDOUT: return "no answer in time: is the host reachable and the port right?"
        case EHOSTUNREACH, ENETUNREACH: return "no route to the host: check the network"
        case ECONNRESET: return "the connection was reset by the server"
        default: return String(cString: strerror(code)).lowercased()
        }
    }

    // MARK: - Health, changes, close

    public func isWritable() async -> Bool {
        guard !readOnly, !state.withLock({ $0.closed }) else { return false }
        // A standby (mid-failover) answers but cannot commit. Bounded: /health must answer.
        let logger = self.logger
        do {
            return try await run("checking the server", write: false, budget: .seconds(2)) { connection in
                try await connection.query("SELECT NOT pg_is_in_recovery()", logger: logger).collect().first?.decode(Bool.self) ?? false
            }
        } catch {
            return false
        }
    }

    public func changes() -> AsyncStream<Void>? {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let id: Int? = state.withLock { s in
            guard !s.closed else { return nil }
            let id = s.nextSubscriber
            s.nextSubscriber += 1
            s.subscribers[id] = continuation
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        listenWanted.continuation.yield()
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) } }
        return stream
    }

    private func wakeSubscribers() {
        for continuation in state.withLock({ Array($0.subscribers.values) }) { continuation.yield() }
    }

    /// `LISTEN receiptdash_audit` on a connection of its own, for as long as the store is open:
    /// a wake-up per notification, and one after each (re)connection (whatever was committed
    /// while it was away is then read). Reconnects with backoff, 0.1 s up to 5 s.
    ///
    /// The listening connection is also asked `SELECT 1` every ``listenerCheck``: a connection the
    /// server dropped does not always end PostgresNIO's notification stream, and a follower must
    /// not wait for ever on a connection that is gone. A check that fails or gets no answer
    /// within ``connectTimeout`` closes the connection and the listener connects again.
    private func listen() async {
        var delay = Duration.milliseconds(100)
        let logger = self.logger
        let answerWithin = connectTimeout
        let clock = self.clock
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.channel) { notifications in
                        delay = .milliseconds(100)
                        self.wakeSubscribers()
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            group.addTask {
                                for try await _ in notifications { self.wakeSubscribers() }
                                throw ListenerLost()
                            }
                            group.addTask {
                                while true {
                                    try await clock.sleep(for: Self.listenerCheck)
                                    try await Self.check(CheckedConnection(connection: connection), within: answerWithin, clock: clock, logger: logger)
                                }
                            }
                            _ = try await group.next()
                            group.cancelAll()
                        }
                    }
                }
            } catch {}
            if Task.isCancelled { break }
            try? await clock.sleep(for: delay)
            delay = min(delay * 2, .seconds(5))
        }
    }

    /// How often a listening connection is checked.
    static let listenerCheck = Duration.seconds(2)

    struct ListenerLost: Error {}

    /// `SELECT 1` on `connection`, answered within `limit` on `clock`, or the connection is
    /// closed (which fails whatever waits on it) and the check fails.
    static func check(_ connection: CheckedConnection, within limit: Duration, clock: any Clock<Duration>, logger: Logger) async throws {
        let answered = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                _ = try await connection.query("SELECT 1", logger: logger).collect()
                return true
            }
            group.addTask {
                try await clock.sleep(for: limit)
                return false
            }
            let answered = try await group.next() ?? false
            // Unanswered: closing the connection ends the query, and with it the group.
            if !answered { try? await connection.close() }
            group.cancelAll()
            return answered
        }
        if !answered { throw ListenerLost() }
    }

    public func words(for error: any Error) -> String {
        Self.describe(error, password: postgresLocation.passwordValue, location: postgresLocation)
    }

    /// Closes the store: followers' ``changes()`` streams end, statements not yet started fail,
    /// and ``run()`` returns once the pool has closed every connection (the listener's too).
    public func close() async {
        let subscribers: [AsyncStream<Void>.Continuation] = state.withLock { s in
            s.closed = true
            defer { s.subscribers = [:] }
            return Array(s.subscribers.values)
        }
        for continuation in subscribers { continuation.finish() }
        listenWanted.continuation.finish()
        stopped.continuation.finish()
    }

    // MARK: - Feed snapshots

    /// Remembers the snapshot a feed read, under the cursor it handed back (a few per feed).
    func remember<Cursor>(_ cursor: Cursor, _ snapshot: String, in path: WritableKeyPath<State, [(Cursor, String)]>) {
        state.withLock { s in
            s[keyPath: path].append((cursor, snapshot))
            if s[keyPath: path].count > 8 { s[keyPath: path].removeFirst() }
        }
    }

    func snapshot<Cursor: Equatable>(for cursor: Cursor, in path: KeyPath<State, [(Cursor, String)]>) -> String? {
        state.withLock { s in s[keyPath: path].last { $0.0 == cursor }?.1 }
    }
}

extension PostgresError.Code {
    /// Whether this SQLSTATE is in the class (the first two characters) of `member`, e.g.
    /// class 08, connection exception, of `.connectionException`: PostgresNIO names codes, not
    /// classes.
    func isInClass(of member: PostgresError.Code) -> Bool { raw.prefix(2) == member.raw.prefix(2) }
}
