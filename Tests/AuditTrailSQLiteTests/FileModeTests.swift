@testable import AuditTrail
@testable import AuditTrailSQLite
import Foundation
import AppStoreAPI
import ReceiptCore
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The audit database and its WAL/SHM are created owner-only (0600) in directories receiptdash
/// makes owner-only (0700); secret files readable by others are warned about.
@Suite struct FileModeTests {
    static func mode(_ path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_mode) & 0o777
    }

    static func folder() throws -> String {
        let path = TemporaryFolder("file-modes").appending("files").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return path
    }

    @Test func freshAuditDatabaseAndItsWALAreOwnerOnly() async throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/made/for/it/audit.sqlite"
        let store = try AuditStore(path: path)
        _ = try await store.counts()
        #expect(Self.mode(path) == 0o600)
        #expect(Self.mode(path + "-wal") == 0o600)
        #expect(Self.mode(path + "-shm") == 0o600)
        #expect(Self.mode(root + "/made") == 0o700)
        #expect(Self.mode(root + "/made/for") == 0o700)
        #expect(Self.mode(root + "/made/for/it") == 0o700)
        // The directory that was there already is left as it was.
        #expect(Self.mode(root) == 0o755)
    }

    /// A durable (receiver) store in an existing directory: the file is 0600, the directory kept.
    @Test func durableStoreInAnExistingDirectory() async throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/audit.sqlite"
        let store = try AuditStore(path: path, durable: true)
        _ = try await store.counts()
        #expect(Self.mode(path) == 0o600)
        #expect(Self.mode(path + "-wal") == 0o600)
        #expect(Self.mode(path + "-shm") == 0o600)
        #expect(Self.mode(root) == 0o755)
    }

    /// An existing database keeps the mode its owner chose.
    @Test func anExistingDatabaseKeepsItsMode() async throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/audit.sqlite"
        do { _ = try AuditStore(path: path) }
        #expect(chmod(path, 0o640) == 0)
        let store = try AuditStore(path: path)
        _ = try await store.counts()
        #expect(Self.mode(path) == 0o640)
    }

    @Test func sharedSecretFileReadableByOthersIsWarnedAbout() throws {
        let words = Wording("file-mode")
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/secret"
        try Data("a-shared-secret-value\n".utf8).write(to: URL(fileURLWithPath: file))
        var warnings: [String] = []

        #expect(chmod(file, 0o644) == 0)
        let secret = try SharedSecret.load(file: file, environment: [:], warn: { warnings.append($0) })
        #expect(secret == SharedSecret("a-shared-secret-value"))
        words.said(warnings)

        warnings = []
        #expect(chmod(file, 0o640) == 0)
        _ = try SharedSecret.load(file: file, environment: [:], warn: { warnings.append($0) })
        words.said(warnings)

        warnings = []
        #expect(chmod(file, 0o600) == 0)
        _ = try SharedSecret.load(file: file, environment: [:], warn: { warnings.append($0) })
        #expect(warnings.isEmpty)
        // From the environment: no file, nothing to check.
        _ = try SharedSecret.load(file: nil, environment: [SharedSecret.environmentVariable: "x"], warn: { warnings.append($0) })
        #expect(warnings.isEmpty)
        words.check()
    }
}
