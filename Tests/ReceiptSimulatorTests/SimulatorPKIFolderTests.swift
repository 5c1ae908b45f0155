import Crypto
import Foundation
import ReceiptCore
@testable import ReceiptSimulator
import Testing
import X509
import TestSupport

/// `simulator --pki DIR`: the test PKI and API key kept in a folder, made whole on first use,
/// the same on every later run, so a README example can hand `DIR/root.der` to `--root-ca`
/// before the simulator serves (issue 24: `--root-ca sim-root.der` raced the simulator).
@Suite struct SimulatorPKIFolderTests {
    func scratch() -> String {
        TemporaryFolder("pki").appending("pki").path
    }

    func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    @Test func madeOnFirstUseAndTheSameAfter() throws {
        let base = scratch()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let path = base + "/sim-pki"
        let first = try SimulatorPKIFolder.open(path)
        #expect(first.created)
        #expect(try FileManager.default.contentsOfDirectory(atPath: path).sorted() == SimulatorPKIFolder.files.sorted())
        #expect(try mode(path) == 0o700)
        #expect(try mode(path + "/leaf-key.pem") == 0o600)
        #expect(try mode(path + "/api-key.p8") == 0o600)
        #expect(FileManager.default.contents(atPath: first.rootPath) == Data(first.pki.rootDER))
        #expect(try String(contentsOfFile: path + "/root.pem", encoding: .utf8) == first.pki.rootPEM)

        let again = try SimulatorPKIFolder.open(path)
        #expect(!again.created)
        #expect(again.pki.rootDER == first.pki.rootDER)
        #expect(again.pki.intermediateDER == first.pki.intermediateDER)
        #expect(again.pki.leafDER == first.pki.leafDER)
        #expect(again.apiKey.publicKey.rawRepresentation == first.apiKey.publicKey.rawRepresentation)
        // The reloaded leaf key signs what the first run's leaf certificate verifies.
        let token = try again.pki.signJWS(payload: Data(#"{"bundleId":"com.example.receiptdash"}"#.utf8))
        let parts = token.split(separator: ".").map(String.init)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try Base64Text.decode(Array(parts[2].utf8)))
        let leafKey = try #require(P256.Signing.PublicKey(first.pki.leaf.publicKey))
        #expect(leafKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8)))
        // The API key file is what a look-up's --private-key-file reads.
        let pem = try String(contentsOfFile: first.apiKeyPath, encoding: .utf8)
        #expect(try P256.Signing.PrivateKey(pemRepresentation: pem).publicKey.rawRepresentation == first.apiKey.publicKey.rawRepresentation)
    }

    /// Eight simulators starting at once on a new folder agree on one PKI; one made it.
    @Test func concurrentFirstUsesAgree() async throws {
        let base = scratch()
        defer { try? FileManager.default.removeItem(atPath: base) }
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        let path = base + "/shared"
        let folders = try await withThrowingTaskGroup(of: SimulatorPKIFolder.self) { group in
            for _ in 0..<8 { group.addTask { try SimulatorPKIFolder.open(path) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(folders.count == 8)
        #expect(Set(folders.map(\.pki.rootDER)).count == 1)
        #expect(folders.filter(\.created).count == 1)
        // No staging folder is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: base) == ["shared"])
    }

    @Test func anEmptyFolderIsFilledAndAnIncompleteOneIsNamed() throws {
        let path = scratch()
        let words = Wording("simulator-pki-folder", replacing: [(path, "<pki>")])
        defer { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        #expect(try SimulatorPKIFolder.open(path).created)
        try FileManager.default.removeItem(atPath: path + "/leaf-key.pem")
        let refusal1 = #expect(throws: ServerAPISimulatorError.self) { try SimulatorPKIFolder.open(path) }
        #expect(refusal1?.code == .pki)
        words.said(refusal1?.reason)
        try Data("not a key".utf8).write(to: URL(fileURLWithPath: path + "/leaf-key.pem"))
        let refusal2 = #expect(throws: ServerAPISimulatorError.self) { try SimulatorPKIFolder.open(path) }
        #expect(refusal2?.code == .pki)
        words.said(refusal2?.reason)
        try Data(P256.Signing.PrivateKey().pemRepresentation.utf8).write(to: URL(fileURLWithPath: path + "/leaf-key.pem"))
        let refusal3 = #expect(throws: ServerAPISimulatorError.self) { try SimulatorPKIFolder.open(path) }
        #expect(refusal3?.code == .pki)
        words.said(refusal3?.reason)
        words.check()
    }

    @Test func aFileInTheWayIsNamed() throws {
        let path = scratch()
        let words = Wording("simulator-pki-folder", replacing: [(path, "<pki>")])
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data("x".utf8).write(to: URL(fileURLWithPath: path))
        let refusal4 = #expect(throws: ServerAPISimulatorError.self) { try SimulatorPKIFolder.open(path) }
        #expect(refusal4?.code == .pki)
        words.said(refusal4?.reason)
        words.check()
    }
}
