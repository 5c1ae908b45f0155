import Foundation
import AppStoreAPI
import ReceiptCore

/// A failure to name, open or reach an audit database. Equality compares only the ``Code``.
public struct AuditDatabaseError: CodedError {
    public enum Code: String, CaseIterable, CodedErrorCode {
        /// `--db` is not a path nor a postgres:// URL we can use.
        case invalidLocation = "invalid location"
        /// Plain text to a host that is not loopback, or TLS checks asked off.
        case insecure
        /// The database could not be opened, reached or migrated.
        case unavailable
        /// The database refused a statement (a constraint, a read-only store): retrying won't help.
        case refused
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// Where the audit trail lives, from `--db`: a SQLite file (the default, and the embedded demo)
/// or a team's PostgreSQL, `postgres://USER@HOST:PORT/DATABASE` (also `postgresql://`, with
/// `?sslmode=require` or `verify-full`).
public enum AuditDatabase: Sendable, Hashable, CustomStringConvertible {
    /// The audit database used when no `--db` is given: `$XDG_DATA_HOME/receiptdash/audit.sqlite`
    /// (`~/.local/share/…` without it).
    public static func defaultPath(environment: [String: String]) -> String {
        let base = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.local/share"
        return base + "/receiptdash/audit.sqlite"
    }

    case sqlite(path: String)
    case postgres(PostgresLocation)

    /// Reads a `--db` value. A URL's password comes from the URL, else `PGPASSWORD`, else
    /// `~/.pgpass` (or `PGPASSFILE`), as libpq reads them.
    public init(_ text: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(AuditDatabaseError) {
        let lowered = text.lowercased()
        if lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") {
            self = .postgres(try PostgresLocation(url: text, environment: environment))
        } else if lowered.contains("://") || lowered.hasPrefix("postgres:") || lowered.hasPrefix("postgresql:") {
            throw AuditDatabaseError(
                .invalidLocation, "--db takes a file path or a postgres:// URL, not \(PostgresLocation.redacted(text))")
        } else {
            self = .sqlite(path: text)
        }
    }

    /// Whether a `--db` value names PostgreSQL.
    public static func isPostgres(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    /// As it may be shown: a path, or a URL whose password is masked.
    public var description: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let location): location.description
        }
    }
}

/// A PostgreSQL server and database. Its ``description`` never holds the password.
public struct PostgresLocation: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    public enum TLSMode: String, Sendable, Hashable {
        /// No TLS: allowed to a loopback host only.
        case disable
        /// TLS required, the server's certificate verified against the system roots (or
        /// `sslrootcert`) and its host name checked. libpq's `require` skips the verification;
        /// ours never does.
        case require
        /// The same, as libpq names it.
        case verifyFull = "verify-full"
    }

    public var host: String
    public var port: Int
    public var user: String
    public var database: String
    public var tls: TLSMode
    /// A CA file (`sslrootcert`) to trust besides the system's roots.
    public var rootCertificate: String?
    /// Where the password came from (`url`, `PGPASSWORD`, the pgpass file), for messages.
    public private(set) var passwordSource: String?
    /// Never printed: ``description``, ``customMirror`` and ``masked`` leave it out.
    let password: Secret?

    /// Holds the password so that no description of the location can show it.
    struct Secret: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
        let value: String
        var description: String { "****" }
        var customMirror: Mirror { Mirror(self, children: []) }
    }

    public var passwordValue: String? { password?.value }

    /// Whether ``host`` is loopback by the one rule (``Loopback/isLoopback(host:)``): a name
    /// such as `127.db.example.com` is not, so it gets TLS by default.
    public var isLoopback: Bool { Loopback.isLoopback(host: host) }

    public init(url text: String, environment: [String: String]) throws(AuditDatabaseError) {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw AuditDatabaseError(.invalidLocation, "\(Self.redacted(text)) is not a postgres:// URL")
        }
        guard let host = components.host, !host.isEmpty else {
            throw AuditDatabaseError(.invalidLocation, "\(Self.redacted(text)) names no host: postgres://USER@HOST:PORT/DATABASE")
        }
        self.host = host
        port = components.port ?? 5432
        guard (1...65_535).contains(port) else { throw AuditDatabaseError(.invalidLocation, "the port \(port) is not a port") }
        user = components.user.flatMap { $0.removingPercentEncoding } ?? environment["PGUSER"] ?? environment["USER"] ?? "postgres"
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        database = path.removingPercentEncoding.flatMap { $0.isEmpty ? nil : $0 } ?? environment["PGDATABASE"] ?? user
        var mode: TLSMode?
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                switch item.value {
                case "disable": mode = .disable
                case "require": mode = .require
                case "verify-full": mode = .verifyFull
                case let other:
                    throw AuditDatabaseError(
                        .insecure,
                        "sslmode=\(other ?? "") is not accepted: use require or verify-full (both verify the server's certificate), or disable on loopback")
                }
            case "sslrootcert": rootCertificate = item.value
            default:
                throw AuditDatabaseError(.invalidLocation, "unknown parameter \(item.name) in --db (known: sslmode, sslrootcert)")
            }
        }
        let isLoopback = Loopback.isLoopback(host: host)
        tls = mode ?? (isLoopback ? .disable : .verifyFull)
        if tls == .disable, !isLoopback {
            throw AuditDatabaseError(
                .insecure, "plain text to \(host) is refused: the audit trail and its password would cross the network in clear; use sslmode=verify-full")
        }
        if let inURL = components.password?.removingPercentEncoding {
            password = Secret(value: inURL)
            passwordSource = "the URL"
        } else if let fromEnvironment = environment["PGPASSWORD"], !fromEnvironment.isEmpty {
            password = Secret(value: fromEnvironment)
            passwordSource = "PGPASSWORD"
        } else if let (found, file) = Self.pgpass(host: host, port: port, database: database, user: user, environment: environment) {
            password = Secret(value: found)
            passwordSource = file
        } else {
            password = nil
        }
    }

    /// `postgres://user@host:port/database?sslmode=…`: the password is never part of it.
    public var description: String {
        var text = "postgres://\(user)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)"
        if tls != .disable { text += "?sslmode=\(tls.rawValue)" }
        return text
    }

    public var customMirror: Mirror { Mirror(self, children: ["location": description]) }

    /// `text` with anything between `://user:` and `@` replaced by `****` (for errors about a
    /// value we could not parse).
    public static func redacted(_ text: String) -> String {
        guard let scheme = text.range(of: "://"), let at = text[scheme.upperBound...].firstIndex(of: "@") else { return text }
        let userInfo = text[scheme.upperBound..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":****" + String(text[at...])
    }

    /// The password for this server from the pgpass file (`PGPASSFILE`, else `~/.pgpass`):
    /// lines `host:port:database:user:password`, `*` matching anything, `\:` and `\\` escaped.
    /// A file others can read is ignored, as libpq ignores it.
    static func pgpass(host: String, port: Int, database: String, user: String, environment: [String: String]) -> (String, String)? {
        let file = environment["PGPASSFILE"] ?? ((environment["HOME"] ?? NSHomeDirectory()) + "/.pgpass")
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: file),
            let permissions = attributes[.posixPermissions] as? Int, permissions & 0o077 == 0,
            let text = try? String(contentsOfFile: file, encoding: .utf8)
        else { return nil }
        for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
            var fields: [String] = [""]
            var escaped = false
            for character in line {
                if escaped {
                    fields[fields.count - 1].append(character)
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == ":" && fields.count < 5 {
                    fields.append("")
                } else {
                    fields[fields.count - 1].append(character)
                }
            }
            guard fields.count == 5 else { continue }
            let wanted = [host, String(port), database, user]
            if zip(fields.prefix(4), wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return (fields[4], file) }
        }
        return nil
    }
}
