import Foundation
import LocalFiles
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Who may read a private file: the one check secret files go through, and files created
/// owner-only without touching one that exists.
@Suite struct FilePermissionsTests {
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

    /// The one check, as the `.p8` key and `--tls-key` use it.
    @Test func theOneCheck() throws {
        let words = Wording("file-permissions")
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/key.pem"
        try Data("k".utf8).write(to: URL(fileURLWithPath: file))
        #expect(chmod(file, 0o604) == 0)
        words.said(FilePermissions.readableByOthersWarning(path: file, what: "the TLS key file"))
        #expect(chmod(file, 0o600) == 0)
        #expect(FilePermissions.readableByOthersWarning(path: file, what: "the TLS key file") == nil)
        #expect(chmod(file, 0o400) == 0)
        #expect(FilePermissions.readableByOthersWarning(path: file, what: "the TLS key file") == nil)
        #expect(FilePermissions.readableByOthersWarning(path: root + "/missing", what: "the TLS key file") == nil)
        words.check()
    }

    /// Made 0600 when absent; an existing file is never touched.
    @Test func createPrivateFileDoesNotTouchAnExistingFile() throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/f"
        #expect(try FilePermissions.createPrivateFile(atPath: file))
        #expect(Self.mode(file) == 0o600)
        #expect(chmod(file, 0o644) == 0)
        #expect(try !FilePermissions.createPrivateFile(atPath: file))
        #expect(Self.mode(file) == 0o644)
        let missing = #expect(throws: FileCreationError.self) { try FilePermissions.createPrivateFile(atPath: root + "/no/such/dir/f") }
        #expect(missing?.code == .cannotCreateFile)
        #expect(missing?.errno == ENOENT)
        #expect(missing?.path == root + "/no/such/dir/f")
    }
}
