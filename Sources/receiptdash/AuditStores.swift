import ArgumentParser
import AuditTrail
import AuditTrailPostgres
import AuditTrailSQLite
import CommandOptions
import Foundation
import UntrustedText

/// Opens audit databases by their `--db` value.
public enum AuditStores {
    /// Opens (creating and migrating, unless `readOnly`) the audit trail `database` names.
    /// - Parameter durable: SQLite commits with `synchronous = FULL` (the notification
    ///   receiver's store); PostgreSQL commits are durable anyway.
    public static func open(_ database: AuditDatabase, readOnly: Bool = false, durable: Bool = false) async throws(AuditDatabaseError)
        -> any AuditBackend
    {
        switch database {
        case .sqlite(let path):
            var isFolder: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isFolder)
            if readOnly, !exists {
                throw AuditDatabaseError(.unavailable, "no audit database at \(path): nothing has recorded there yet")
            }
            if exists, isFolder.boolValue {
                throw AuditDatabaseError(
                    .unavailable,
                    "cannot open the audit database \(path): \(path) is a folder, not a database file: name a file, e.g. \((path as NSString).appendingPathComponent("audit.sqlite"))")
            }
            do {
                return readOnly ? try AuditStore(readOnlyPath: path) : try AuditStore(path: path, durable: durable)
            } catch {
                throw AuditDatabaseError(.unavailable, "cannot open the audit database \(path): \(words(error))")
            }
        case .postgres(let location):
            return try await PostgresAuditStore.open(location, readOnly: readOnly)
        }
    }

    /// Any error of an audit store in words for a person: the reason of our own errors,
    /// SQLite's message without GRDB's statement dump, PostgreSQL's without PostgresNIO's
    /// types; never a password (PostgreSQL errors are masked where they are made).
    public static func words(_ error: any Error) -> String {
        AuditErrorWords.common(error) ?? AuditStore.words(error) ?? PostgresAuditStore.describe(error, password: nil)
    }

    /// Reads `text` as a `--db` value and opens it.
    public static func open(_ text: String, readOnly: Bool = false, durable: Bool = false) async throws(AuditDatabaseError)
        -> any AuditBackend
    {
        try await open(try AuditDatabase(text), readOnly: readOnly, durable: durable)
    }
}

extension DatabaseOption {
    /// Opens (creating and migrating, unless `readOnly`) the audit database; a failure is said
    /// in plain words and ends the command with status 1.
    func open(readOnly: Bool = false, durable: Bool = false) async throws -> any AuditBackend {
        try await AuditOpening.open(path, readOnly: readOnly, durable: durable)
    }
}

extension AuditOpening {
    static func open(_ text: String, readOnly: Bool = false, durable: Bool = false) async throws -> any AuditBackend {
        do {
            return try await AuditStores.open(try AuditDatabase(text), readOnly: readOnly, durable: durable)
        } catch {
            Console.standard.error("receiptdash: \(error.reason)")
            throw ExitCode.failure
        }
    }
}
