@testable import AuditTrail
import Foundation
import Testing
import TestSupport

/// `--db` values: a path or a postgres:// URL, where the password comes from, and that no
/// representation of a location ever shows it.
@Suite struct AuditDatabaseTests {
    static let secret = "s3cr3t-Pa55:word"

    func pgpass(_ text: String, mode: Int = 0o600) throws -> String {
        let file = TemporaryFolder("pgpass").appending("pgpass").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file)
        return file
    }

    func location(_ text: String, _ environment: [String: String] = [:]) throws -> PostgresLocation {
        guard case .postgres(let location) = try AuditDatabase(text, environment: environment) else {
            Issue.record("\(text) is not a postgres location")
            throw AuditDatabaseError(.invalidLocation, "")
        }
        return location
    }

    @Test func pathsStaySQLite() throws {
        #expect(try AuditDatabase("/var/lib/receiptdash/audit.sqlite") == .sqlite(path: "/var/lib/receiptdash/audit.sqlite"))
        #expect(try AuditDatabase("audit.sqlite") == .sqlite(path: "audit.sqlite"))
        #expect(throws: AuditDatabaseError(.invalidLocation, "")) { try AuditDatabase("mysql://root@db/audit") }
        // A URL with a slash missing is not a file name to create.
        #expect(throws: AuditDatabaseError(.invalidLocation, "")) { try AuditDatabase("postgres:/team@db.internal/audit") }
    }

    @Test func urlParts() throws {
        let loopback = try location("postgres://team@127.0.0.1:6543/audit")
        #expect(loopback.host == "127.0.0.1")
        #expect(loopback.port == 6543)
        #expect(loopback.user == "team")
        #expect(loopback.database == "audit")
        #expect(loopback.tls == .disable)
        #expect(loopback.description == "postgres://team@127.0.0.1:6543/audit")
        let remote = try location("postgresql://team@db.internal/audit")
        #expect(remote.port == 5432)
        #expect(remote.tls == .verifyFull, "TLS by default off loopback")
        #expect(remote.description == "postgres://team@db.internal:5432/audit?sslmode=verify-full")
        #expect(try location("postgres://team@db.internal/audit?sslmode=require").tls == .require)
        #expect(try location("postgres://team@db.internal/audit?sslmode=verify-full&sslrootcert=/etc/ca.pem").rootCertificate == "/etc/ca.pem")
    }

    @Test func plainTextOnlyToLoopbackAndNoTLSChecksOff() {
        #expect(throws: AuditDatabaseError(.insecure, "")) { try AuditDatabase("postgres://team@db.internal/audit?sslmode=disable") }
        for mode in ["allow", "prefer", "verify-ca", "bogus"] {
            #expect(throws: AuditDatabaseError(.insecure, "")) { try AuditDatabase("postgres://team@db.internal/audit?sslmode=\(mode)") }
        }
        #expect(throws: AuditDatabaseError(.invalidLocation, "")) { try AuditDatabase("postgres://team@db.internal/audit?password=x") }
        #expect(throws: AuditDatabaseError(.invalidLocation, "")) { try AuditDatabase("postgres:///audit") }
    }

    @Test func passwordFromTheURLThenPGPASSWORDThenPgpass() throws {
        let file = try pgpass("db.internal:5432:audit:team:from-pgpass\n")
        let inURL = try location("postgres://team:\(Self.secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)@db.internal/audit", ["PGPASSWORD": "env", "PGPASSFILE": file])
        #expect(inURL.passwordValue == Self.secret)
        #expect(inURL.passwordSource == "the URL")
        let fromEnvironment = try location("postgres://team@db.internal/audit", ["PGPASSWORD": "env", "PGPASSFILE": file])
        #expect(fromEnvironment.passwordValue == "env")
        #expect(fromEnvironment.passwordSource == "PGPASSWORD")
        let fromFile = try location("postgres://team@db.internal/audit", ["PGPASSFILE": file])
        #expect(fromFile.passwordValue == "from-pgpass")
        #expect(fromFile.passwordSource == file)
        #expect(try location("postgres://team@db.internal/audit", ["PGPASSFILE": "/nonexistent"]).passwordValue == nil)
    }

    @Test func pgpassWildcardsEscapesAndPermissions() throws {
        let file = try pgpass(
            """
            # comment
            other.host:*:*:team:wrong
            db.internal:5432:audit:other:wrong
            db.internal:*:audit:team:pa\\:ss\\\\word
            *:*:*:*:fallback
            """)
        #expect(try location("postgres://team@db.internal:7000/audit", ["PGPASSFILE": file]).passwordValue == "pa:ss\\word")
        #expect(try location("postgres://someone@elsewhere/x", ["PGPASSFILE": file]).passwordValue == "fallback")
        // A file others can read is ignored, as libpq ignores it.
        let open = try pgpass("*:*:*:*:readable\n", mode: 0o644)
        #expect(try location("postgres://team@db.internal/audit", ["PGPASSFILE": open]).passwordValue == nil)
    }

    @Test func noRepresentationShowsThePassword() throws {
        let database = try AuditDatabase("postgres://team:\(Self.secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)@db.internal/audit")
        guard case .postgres(let location) = database else { return }
        var dumped = ""
        dump(location, to: &dumped)
        var dumpedDatabase = ""
        dump(database, to: &dumpedDatabase)
        for text in [
            database.description, "\(database)", String(describing: database), String(reflecting: database), location.description,
            String(reflecting: location), dumped, dumpedDatabase, "\(Mirror(reflecting: location).children.map { "\($0.value)" })",
        ] {
            #expect(!text.contains(Self.secret), "\(text)")
            #expect(!text.contains("Pa55"), "\(text)")
        }
        #expect(database.description == "postgres://team@db.internal:5432/audit?sslmode=verify-full")
    }

    @Test func errorsAboutUnparsableValuesRedactThePassword() {
        do {
            _ = try AuditDatabase("postgres://team:\(Self.secret)@/audit")
            Issue.record("no error")
        } catch {
            #expect(!error.reason.contains(Self.secret))
            #expect(error.reason.contains("postgres://team:****@"))
        }
        #expect(PostgresLocation.redacted("postgres://u:p@h/d") == "postgres://u:****@h/d")
        #expect(PostgresLocation.redacted("postgres://u@h/d") == "postgres://u@h/d")
    }
}
