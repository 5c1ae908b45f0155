import AuditTrail
import Crypto
import Foundation
import Logging
import NotificationReceiver
import AppStoreAPI
import ReceiptCore
import ReceiptSimulator
import RetryEngine
import ServiceTestSupport
import Testing
import X509

@testable import Doctor
import TestSupport

/// `doctor`'s checks against the API simulator, real files and a closed port: each fault a new
/// user makes (a wrong key id, a key file others can read, a clock off by minutes, a stopped
/// receiver, a secret file with more than the secret) is named with what to do.
@Suite struct DoctorTests {
    static let keyID = "2X9R4HXF34"
    static let issuer = "57246542-96fe-1a63-e053-0824d011072a"
    static let bundle = "com.example.receiptdash"

    final class Setup: @unchecked Sendable {
        let folder: URL
        let simulator: ServerAPISimulator
        let keyFile: String

        init(serverClockOffset: Double = 0) async throws {
            folder = TemporaryFolder("doctor").url
            let key = P256.Signing.PrivateKey()
            keyFile = folder.appendingPathComponent("key.p8").path
            try Data(key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyFile))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile)
            var configuration = ServerAPIConfiguration(
                publicKey: key.publicKey, clock: ServiceClock(now: { Date().addingTimeInterval(serverClockOffset) }, clock: ContinuousClock()))
            configuration.keyID = DoctorTests.keyID
            simulator = try await ServerAPISimulator.start(configuration)
        }

        func doctor(keyID: String = DoctorTests.keyID, secretFile: String? = nil, receiver: String? = nil, environment: [String: String] = [:])
            throws -> Doctor
        {
            let flags = APICredentials.Flags(issuerID: DoctorTests.issuer, keyID: keyID, privateKeyFile: keyFile, bundleID: DoctorTests.bundle)
            return Doctor(
                api: APISetup(flags: flags, environment: environment, hosts: try simulator.hosts),
                database: folder.appendingPathComponent("audit.sqlite").path, sharedSecretFile: secretFile, receiverURL: receiver, caFile: nil,
                environment: environment, openStore: SQLiteTrails.openReadOnly)
        }

        func check(_ report: DoctorReport, _ id: String) throws -> DoctorCheck {
            try #require(report.checks.first { $0.id == id }, "no check \(id) in \(report.checks.map(\.id))")
        }

        func stop() async throws {
            try await simulator.stop()
            try? FileManager.default.removeItem(at: folder)
        }
    }

    @Test func aGoodSetUpPassesEveryCheck() async throws {
        // Within the minute allowed, the skew and the server farthest off change from run to run.
        let skew = (#"this machine's clock is [^\n]*?'s"#, "this machine's clock is <skew> <environment>'s")
        let words = Wording("doctor", matching: [skew] + Wording.runVariables)
        let setup = try await Setup()
        let secret = setup.folder.appendingPathComponent("secret").path
        try Data("0123456789abcdef0123456789abcdef\n".utf8).write(to: URL(fileURLWithPath: secret))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret)
        let report = try await setup.doctor(secretFile: secret).run()
        #expect(report.healthy, "\(report.text())")
        #expect(
            report.checks.map(\.id) == [
                "api.credentials", "api.key-file", "api.token", "api.production", "api.sandbox", "clock", "audit.store", "shared-secret",
                "shared-secret-file", "receiver", "terminal",
            ])
        #expect(try setup.check(report, "api.credentials").detail == "key \(Self.keyID) (P-256) of issuer \(Self.issuer) for \(Self.bundle)")
        words.said(try setup.check(report, "api.key-file").detail)
        let production = try setup.check(report, "api.production")
        #expect(production.status == .ok)
        words.said(production.detail)
        // Within the minute allowed (how close depends on how loaded the machine is).
        let clock = try setup.check(report, "clock")
        #expect(clock.status == .ok)
        words.said(clock.detail)
        words.said(try setup.check(report, "audit.store").detail)
        words.said(try setup.check(report, "shared-secret").detail)
        #expect(try setup.check(report, "receiver").status == .skipped)
        // Standard output of the test process is not the terminal the dashboard would use.
        #expect(try setup.check(report, "terminal").status == .skipped)
        words.said(report.text())
        try await setup.stop()
        words.check()
    }

    @Test func aWrongKeyIDIsNamedInBothEnvironments() async throws {
        let words = Wording("doctor")
        let setup = try await Setup()
        let report = try await setup.doctor(keyID: "WRONGKEY01").run()
        #expect(!report.healthy)
        #expect(report.problems == 2)
        for id in ["api.production", "api.sandbox"] {
            let check = try setup.check(report, id)
            #expect(check.status == .failed)
            words.said(check.detail)
            words.said(check.fix)
        }
        // The token itself was made: the key is fine, the id is not.
        #expect(try setup.check(report, "api.token").status == .ok)
        try await setup.stop()
        words.check()
    }

    @Test func aKeyFileOthersCanReadIsAFault() async throws {
        let words = Wording("doctor")
        let setup = try await Setup()
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: setup.keyFile)
        let report = try await setup.doctor().run()
        let check = try setup.check(report, "api.key-file")
        #expect(check.status == .failed)
        words.said(check.detail)
        #expect(check.fix == "chmod 600 \(setup.keyFile)")
        #expect(report.problems == 1)
        #expect(report.text().contains("✗ api.key-file"))
        #expect(report.text().contains("→ chmod 600 \(setup.keyFile)"))
        try await setup.stop()
        words.check()
    }

    @Test func aClockMinutesOffIsNamed() async throws {
        // Both servers are as far off: which one is named changes from run to run.
        let words = Wording("doctor", matching: [(#"(Production|Sandbox)'s"#, "<environment>'s")])
        // The server's clock is 10 minutes ahead of this machine's: ours is 10 minutes behind.
        let setup = try await Setup(serverClockOffset: 600)
        let report = try await setup.doctor().run()
        let check = try setup.check(report, "clock")
        #expect(check.status == .failed)
        words.said(check.detail)
        words.said(check.fix)
        try await setup.stop()
        words.check()
    }

    @Test func aStoppedReceiverIsNamed() async throws {
        let words = Wording("doctor")
        let setup = try await Setup()
        // A port nothing listens on: bound, then closed.
        let port = TestPorts.refusing()
        let report = try await setup.doctor(receiver: "http://127.0.0.1:\(port)/notifications").run()
        let check = try setup.check(report, "receiver")
        #expect(check.status == .failed)
        words.said(check.detail)
        words.said(check.fix)
        // The same over https: the TLS probe finds nobody to shake hands with.
        let tls = try await setup.doctor(receiver: "https://127.0.0.1:\(port)/notifications").run()
        let tlsCheck = try setup.check(tls, "receiver")
        #expect(tlsCheck.status == .failed)
        words.said(tlsCheck.detail)
        try await setup.stop()
        words.check()
    }

    /// A receiver on a real TLS socket whose certificate (from the test CA) lapses within the
    /// hour: trusted with --ca-file, /health answers, the expiry is a ✗; without the CA the
    /// certificate is not trusted.
    @Test func aReceiverCertificateThatExpiresSoonIsNamed() async throws {
        let words = Wording("doctor", matching: Wording.runVariables)
        let setup = try await Setup()
        let (ca, leaf, leafKey) = try TestPKI.tls(caName: "receiptdash doctor test CA")
        let certFile = setup.folder.appendingPathComponent("cert.pem").path
        let keyFile = setup.folder.appendingPathComponent("key.pem").path
        let caFile = setup.folder.appendingPathComponent("ca.pem").path
        try leaf.serializeAsPEM().pemString.write(toFile: certFile, atomically: true, encoding: .utf8)
        try leafKey.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        try ca.serializeAsPEM().pemString.write(toFile: caFile, atomically: true, encoding: .utf8)
        let store = try NotificationStore(path: setup.folder.appendingPathComponent("receiver.sqlite").path).started()
        let receiver = NotificationReceiver(
            sink: store, policy: .replaying(), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let (addresses, listening) = AsyncStream.makeStream(of: String.self)
        let server = Task {
            try await receiver.run(
                host: "127.0.0.1", port: 0, tls: try ReceiverTLS(certificateFile: certFile, keyFile: keyFile), handlesSignals: false
            ) { listening.yield($0) }
        }
        var iterator = addresses.makeAsyncIterator()
        let address = try #require(await iterator.next())

        var doctor = try setup.doctor(receiver: "https://\(address)/notifications")
        doctor.caFile = caFile
        let report = await doctor.run()
        let certificate = try setup.check(report, "receiver.certificate")
        #expect(certificate.status == .failed)
        words.said(certificate.detail)
        #expect(certificate.detail.hasSuffix("(in 0 days)"), "\(certificate.detail)")
        words.said(certificate.fix)
        let health = try setup.check(report, "receiver.health")
        #expect(health.status == .ok)
        #expect(health.detail.hasPrefix("https://\(address)/health answers 200 in "), "\(health.detail)")

        let untrusting = try await setup.doctor(receiver: "https://\(address)/notifications").run()
        let untrusted = try setup.check(untrusting, "receiver.certificate")
        #expect(untrusted.status == .failed)
        words.said(untrusted.detail)

        server.cancel()
        _ = await server.result
        await store.close()
        try await setup.stop()
        words.check()
    }

    @Test func aSecretFileWithMoreThanTheSecretIsNamed() async throws {
        let words = Wording("doctor")
        let setup = try await Setup()
        let secret = setup.folder.appendingPathComponent("secret.env").path
        try Data("SHARED_SECRET=0123456789abcdef0123456789abcdef\n".utf8).write(to: URL(fileURLWithPath: secret))
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: secret)
        let report = try await setup.doctor(secretFile: secret).run()
        let shape = try setup.check(report, "shared-secret")
        #expect(shape.status == .failed)
        words.said(shape.detail)
        let mode = try setup.check(report, "shared-secret-file")
        words.said(mode.detail)
        try await setup.stop()
        words.check()
    }

    @Test func noCredentialsSkipsTheAPIChecksWithWhatToSet() async throws {
        let doctor = Doctor(
            api: APISetup(flags: APICredentials.Flags(), environment: [:], hosts: .apple), database: "/nonexistent-folder/x/audit.sqlite",
            sharedSecretFile: nil, receiverURL: nil, caFile: nil, environment: [:], openStore: SQLiteTrails.openReadOnly)
        let report = await doctor.run()
        let api = try #require(report.checks.first)
        #expect(api.id == "api.credentials")
        #expect(api.status == .skipped)
        #expect(report.checks.first { $0.id == "clock" } == nil)
        // A trail that could not be made where it is asked for is a fault.
        let store = try #require(report.checks.first { $0.id == "audit.store" })
        #expect(store.status == .ok || store.status == .failed)
    }

    /// The `Date` the simulator sends and the client reads back (IMF-fixdate, no formatter made
    /// per answer).
    @Test func httpDatesAreWrittenAndReadAsIMFFixdate() {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 1_795_711_200)) == "Thu, 26 Nov 2026 16:40:00 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 946_684_805.9)) == "Sat, 01 Jan 2000 00:00:05 GMT")
        #expect(HTTPDate.parse("Thu, 26 Nov 2026 16:40:00 GMT") == Date(timeIntervalSince1970: 1_795_711_200))
        var record = APIRequestRecord(
            endpoint: .transactionInfo, environment: .production, url: "https://x", result: .success(httpStatus: 200), latencyMilliseconds: 1)
        #expect(record.serverDate == nil)
        record.dateHeader = "Sat, 01 Jan 2000 00:00:05 GMT"
        #expect(record.serverDate == Date(timeIntervalSince1970: 946_684_805))
    }

    @Test func theTerminalCheckReadsColoursLocaleAndSize() {
        let words = Wording("doctor")
        let good = TerminalCheck.run(.init(environment: ["TERM": "xterm-256color", "LANG": "en_US.UTF-8"], size: (120, 40)))
        #expect(good == [DoctorCheck("terminal", .ok, "256 colours (xterm-256color), UTF-8, 120×40")])
        let bad = TerminalCheck.run(.init(environment: ["TERM": "dumb", "LANG": "C"], size: (60, 20)))
        #expect(bad.map(\.id) == ["terminal"])
        #expect(bad.map(\.status) == [.failed])
        words.said(bad.map(\.detail))
        words.said(bad.map(\.fix))
        let truecolour = TerminalCheck.run(.init(environment: ["TERM": "xterm", "COLORTERM": "truecolor", "LC_ALL": "C.utf8"], size: (80, 24)))
        #expect(truecolour.first?.detail == "24-bit colour (xterm), UTF-8, 80×24")
        words.check()
    }

    @Test func theReportEscapesWhatItQuotesAndWritesJSON() {
        let words = Wording("doctor")
        let report = DoctorReport(checks: [
            DoctorCheck("audit.store", .failed, "cannot open /tmp/a\u{1b}[2Jb", fix: "check it"),
            DoctorCheck("receiver", .skipped, "no receiver named", fix: "add --receiver https://… to check one"),
        ])
        words.said(report.text())
        // On a terminal the marks are painted; the text from the check is still escaped.
        #expect(report.text(colour: true).hasPrefix("\u{1B}[1;31m✗\u{1B}[0m audit.store  cannot open /tmp/a\\x1b[2Jb\n"))
        #expect(report.text(colour: true).contains("\u{1B}[2m–\u{1B}[0m receiver "))
        let json = try? JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any]
        #expect(json?["ok"] as? Bool == false)
        #expect(json?["problems"] as? Int == 1)
        let checks = json?["checks"] as? [[String: Any]]
        #expect(checks?.map { $0["id"] as? String } == ["audit.store", "receiver"])
        #expect(checks?.first?["status"] as? String == "failed")
        #expect(checks?.first?["detail"] as? String == "cannot open /tmp/a\u{1b}[2Jb")
        words.check()
    }
}
