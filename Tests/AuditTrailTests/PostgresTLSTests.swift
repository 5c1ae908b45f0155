@testable import AuditTrail
@testable import AuditTrailPostgres
import Foundation
import PostgresNIO
import ReceiptCore
import Testing
import TestSupport

/// The audit store over TLS to a real server: `Tests/support/postgres.sh` serves TLS with a
/// certificate for `localhost` from a throwaway CA (`RECEIPTDASH_TEST_POSTGRES_CA`). Both
/// `require` and `verify-full` verify the certificate and the host name; nothing turns that off.
// A time limit: a test that waits for ever fails by name instead of stalling the run.
@Suite(.timeLimit(.minutes(2))) struct PostgresTLSTests {
    static var authority: String? {
        ProcessInfo.processInfo.environment["RECEIPTDASH_TEST_POSTGRES_CA"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// A fresh database's URL as a user would type it, on `host`, with the query `query` makes
    /// from the CA file's path. Skipped without a test server that serves TLS.
    func withURL(host: String, query: (String) -> String, _ body: (String, TestAuditDatabase) async throws -> Void) async throws {
        guard TestAuditDatabase.postgresURL != nil, let authority = Self.authority else {
            try Test.cancel("RECEIPTDASH_TEST_POSTGRES_URL or RECEIPTDASH_TEST_POSTGRES_CA is not set (Tests/support/postgres.sh start): skipped")
        }
        try await TestAuditDatabase.with(.postgres) { db in
            let location = try #require(db.postgres)
            try await body("postgres://\(location.user)@\(host):\(location.port)/\(location.database)?\(query(authority))", db)
        }
    }

    func open(_ url: String) async throws -> any AuditBackend {
        guard case .postgres(let location) = try AuditDatabase(url) else { throw AuditDatabaseError(.invalidLocation, "not PostgreSQL") }
        return try await PostgresAuditStore(location: location, connectTimeout: .seconds(120)).runningForTest()
    }

    func failure(_ url: String) async -> String? {
        do {
            let store = try await open(url)
            await store.close()
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// verify-full with the server's CA: the store opens, records, and the server itself says
    /// the session is encrypted.
    @Test func verifyFullWithTheServersAuthority() async throws {
        try await withURL(host: "localhost", query: { "sslmode=verify-full&sslrootcert=\($0)" }) { url, _ in
            let store = try await open(url)
            let first = try await store.record([try AuditBackendTests().ingest("production.b64")])
            let again = try await store.record([try AuditBackendTests().ingest("production.b64")])
            #expect(first.count == 1)
            #expect(again.map(\.id) == first.map(\.id))
            let postgres = try #require(store as? PostgresAuditStore)
            let session = try await postgres.run("the session's TLS", write: false) { connection in
                var found: [String] = []
                for try await (ssl, version) in try await connection.query(
                    "SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()", logger: testLogger
                ).decode((Bool, String?).self) {
                    found.append("\(ssl) \(version ?? "-")")
                }
                return found
            }
            #expect(session == ["true TLSv1.3"])
            await store.close()
        }
    }

    /// The certificate names `localhost`; asked for 127.0.0.1, the name does not match and the
    /// store is not opened, in either mode.
    @Test func aHostNameTheCertificateDoesNotNameIsRefused() async throws {
        let words = Wording("postgres-tls", matching: Wording.runVariables)
        for mode in ["verify-full", "require"] {
            try await withURL(host: "127.0.0.1", query: { "sslmode=\(mode)&sslrootcert=\($0)" }) { url, _ in
                let message = try #require(await failure(url), "opened with sslmode=\(mode)")
                words.said(message)
                words.said(message)
            }
        }
        words.check()
    }

    /// Without the CA, the server's certificate is nobody the system trusts: `require` does
    /// not mean "encrypt but believe anyone", as it does in libpq.
    @Test func anUntrustedCertificateIsRefused() async throws {
        let words = Wording("postgres-tls", matching: Wording.runVariables)
        for mode in ["verify-full", "require"] {
            try await withURL(host: "localhost", query: { _ in "sslmode=\(mode)" }) { url, _ in
                let message = try #require(await failure(url), "opened with sslmode=\(mode) and no sslrootcert")
                words.said(message)
                let password = try #require(TestAuditDatabase.postgres(url)?.passwordValue)
                #expect(!message.contains(password))
            }
        }
        words.check()
    }
}

extension TestAuditDatabase {
    /// The location a URL names, with the password the environment gives it.
    static func postgres(_ url: String) -> PostgresLocation? {
        try? PostgresLocation(url: url, environment: ProcessInfo.processInfo.environment)
    }
}
