@testable import AuditTrail
import Foundation
import AppStoreAPI
import ReceiptCore
import ReceiptSimulator
import Testing

/// One loopback rule (`Loopback.isLoopback(host:)`: 127.0.0.0/8 as four decimal parts, `::1`,
/// `localhost`) for every host check: plain http to verifyReceipt, the API and a receiver, and
/// the PostgreSQL `sslmode` default.
@Suite struct LoopbackRuleTests {
    static let loopback = [
        "127.0.0.1", "127.255.255.254", "127.0.0.0", "127.1.2.3", "::1", "[::1]", "0:0:0:0:0:0:0:1", "localhost", "LOCALHOST",
    ]
    static let notLoopback = [
        "127.db.example.com", "128.0.0.1", "localhost.example.com", "0.0.0.0", "::", "[::]", "126.255.255.255", "127.0.0.256",
        "127.0.0", "127.1", "127.0.0.1.", "0127.0.0.1", "127.00.0.1", "127.0.0.01", "127.0.0.1a", "example.com", "", "[", "[]",
        "::ffff:127.0.0.1", "localhost:80", " 127.0.0.1", "127.0.0.-1", "١٢٧.0.0.1",
        // Fully qualified: DNS, not /etc/hosts, says where it goes.
        "localhost.", "LOCALHOST.",
    ]

    @Test func theTable() {
        for host in Self.loopback { #expect(Loopback.isLoopback(host: host), "\(host)") }
        for host in Self.notLoopback { #expect(!Loopback.isLoopback(host: host), "\(host.debugDescription)") }
    }

    @Test func urls() {
        #expect(Loopback.isLoopback(url: "http://127.0.0.1:8080/x"))
        #expect(Loopback.isLoopback(url: "http://[::1]:8080/x"))
        #expect(Loopback.isLoopback(url: "http://localhost/x"))
        #expect(!Loopback.isLoopback(url: "http://127.db.example.com/x"))
        #expect(!Loopback.isLoopback(url: "postgres://u@127.db.example.com/x"))
        #expect(!Loopback.isLoopback(url: "not a url"))
    }

    @Test func postgresDefaultsToTLSOffLoopbackOnly() throws {
        let name = try PostgresLocation(url: "postgres://u@127.db.example.com/x", environment: [:])
        #expect(name.tls == .verifyFull)
        #expect(!name.isLoopback)
        #expect(name.description == "postgres://u@127.db.example.com:5432/x?sslmode=verify-full")
        #expect(try PostgresLocation(url: "postgres://u@127.0.0.1/x", environment: [:]).tls == .disable)
        #expect(try PostgresLocation(url: "postgres://u@localhost/x", environment: [:]).tls == .disable)
        #expect(try PostgresLocation(url: "postgres://u@[::1]/x", environment: [:]).tls == .disable)
        #expect(try PostgresLocation(url: "postgres://u@128.0.0.1/x", environment: [:]).tls == .verifyFull)
        #expect(throws: AuditDatabaseError(.insecure, "")) {
            try PostgresLocation(url: "postgres://u@127.db.example.com/x?sslmode=disable", environment: [:])
        }
        #expect(try PostgresLocation(url: "postgres://u@127.0.0.1/x?sslmode=disable", environment: [:]).tls == .disable)
    }

    @Test func plainHTTPOnlyToLoopback() throws {
        #expect(throws: Never.self) { try VerifyEndpoint.check("http://127.0.0.1:8099/verifyReceipt", option: "--production-url") }
        #expect(throws: Never.self) { try VerifyEndpoint.check("http://[::1]:8099/verifyReceipt", option: "--production-url") }
        #expect(throws: Never.self) { try VerifyEndpoint.check("http://localhost/verifyReceipt", option: "--production-url") }
        for url in ["http://127.db.example.com/verifyReceipt", "http://localhost.example.com/v", "http://0.0.0.0/v", "http://128.0.0.1/v"] {
            do {
                try VerifyEndpoint.check(url, option: "--production-url")
                Issue.record("\(url) accepted")
            } catch {
                #expect(error.code == .insecureEndpoint, "\(url)")
            }
            #expect(throws: VerificationError.self) { try APIHost(.sandbox, url: url) }
            #expect(throws: NotificationSenderError.self) { try NotificationSender.check(url: url) }
        }
        #expect(throws: Never.self) { try APIHost(.sandbox, url: "http://127.0.0.1:8080/api/sandbox") }
        #expect(throws: Never.self) { try NotificationSender.check(url: "http://[::1]:9000/notifications") }
        #expect(throws: Never.self) { try NotificationSender.check(url: "https://127.db.example.com/notifications") }
    }
}
