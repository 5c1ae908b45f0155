import ArgumentParser
import AuditTrail
import Foundation
import UntrustedText

/// Where the audit database is.
public struct DatabaseOption: ParsableArguments {
    public init() {}

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The audit database: a SQLite file (default: $XDG_DATA_HOME/receiptdash/audit.sqlite) or postgres://USER@HOST:PORT/DATABASE (password from PGPASSWORD or ~/.pgpass).",
            valueName: "path|url"))
    public var db: String?

    /// The `--db` value, or the default SQLite path.
    public var path: String { db ?? AuditDatabase.defaultPath(environment: ProcessInfo.processInfo.environment) }

    public func validate() throws {
        if let db { _ = try AuditOpening.parse(db) }
    }
}

/// `--db` where recording is optional (verify, lookup, dash): nothing is recorded without it.
public struct RecordingDatabaseOption: ParsableArguments {
    public init() {}

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Also record in this audit database: a SQLite path or postgres://USER@HOST:PORT/DATABASE (password from PGPASSWORD or ~/.pgpass); history finds it there.",
            valueName: "path|url"))
    public var db: String?

    public func validate() throws {
        if let db { _ = try AuditOpening.parse(db) }
    }
}

/// `--db` values as every command takes them (the executable opens them: it links the stores).
public enum AuditOpening {
    /// A usage error (exit 64) for a value that is neither a path nor a usable postgres:// URL.
    public static func parse(_ text: String) throws -> AuditDatabase {
        do {
            let database = try AuditDatabase(text)
            if case .postgres(let location) = database, location.passwordSource == "the URL" {
                Console.standard.error(
                    "receiptdash: warning: the password in --db is visible to every user of this machine (ps); put it in PGPASSWORD or ~/.pgpass")
            }
            return database
        } catch {
            throw ValidationError(error.reason)
        }
    }
}
