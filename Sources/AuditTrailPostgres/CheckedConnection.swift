import Logging
import NIOCore
import PostgresNIO

/// A connection the store's statements run on: each statement is written on the connection's
/// event loop, in the same turn that finds it open, so none is ever written to a closed one.
///
/// PostgresNIO (1.33) never answers a statement written after its connection closed: the
/// statement's promise goes with the write that the closed pipeline drops, and the caller's
/// `await` waits for ever, deaf to cancellation (`PostgresClosedConnectionTests` shows it).
/// A pooled connection closes whenever the server ends it (a restart, a failover,
/// `pg_terminate_backend`), also between two statements of one transaction. A statement that
/// is in flight when the connection closes is failed by PostgresNIO itself; checked here, one
/// that is not yet written fails at once with ``ConnectionLost`` (retried as any lost
/// connection), with no task that watches and no polling.
struct CheckedConnection: Sendable {
    let connection: PostgresConnection

    /// Runs `query` and collects its rows (as every statement of the store reads them).
    @discardableResult
    func query(_ query: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line) async throws -> CheckedRows {
        let connection = self.connection
        let eventLoop = connection.eventLoop
        let result = try await eventLoop.flatSubmit { () -> EventLoopFuture<PostgresQueryResult> in
            // On the event loop: the connection cannot close between this check and the write.
            guard !connection.isClosed else { return eventLoop.makeFailedFuture(ConnectionLost()) }
            return connection.query(query, logger: logger, file: file, line: line)
        }.get()
        return CheckedRows(rows: result.rows)
    }

    var isClosed: Bool { connection.isClosed }

    func close() async throws { try await connection.close() }
}

/// A statement's rows, read in full.
struct CheckedRows: AsyncSequence, Sendable {
    let rows: [PostgresRow]

    func collect() async throws -> [PostgresRow] { rows }

    func makeAsyncIterator() -> Iterator { Iterator(rows: rows[...]) }

    struct Iterator: AsyncIteratorProtocol {
        var rows: ArraySlice<PostgresRow>
        mutating func next() async throws -> PostgresRow? { rows.popFirst() }
    }
}

/// The connection closed before the statement could be written.
struct ConnectionLost: Error, CustomStringConvertible {
    var description: String { "the connection closed under the statement" }
}
