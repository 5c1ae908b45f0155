import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A folder of a test's own under the system's temporary folder (`TMPDIR`, else /tmp), made by
/// mkdtemp: a name nobody else has, made atomically with mode 0700, so no other process or test
/// can plant a file or a link in it first. ``remove()`` takes it away with everything in it; or
/// use ``withTemporaryFolder(_:_:)``, which removes it after its body.
package struct TemporaryFolder: Sendable {
    package let url: URL

    package var path: String { url.path }

    /// The system's temporary folder, without a trailing slash.
    package static var base: String {
        let path = FileManager.default.temporaryDirectory.path
        return path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
    }

    /// Makes the folder, named `prefix-` and six random characters. mkdtemp fails only when the
    /// temporary folder itself cannot be written, and then no test that needs one can run.
    package init(_ prefix: String = "receiptdash") {
        let base = Self.base
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let name = mkdtemp(buffer.baseAddress!) else { return nil }
            return String(cString: name)
        }
        guard let made else { preconditionFailure("mkdtemp under \(base) failed: errno \(errno)") }
        url = URL(fileURLWithPath: made, isDirectory: true)
    }

    /// `name` in the folder (not made).
    package func appending(_ name: String) -> URL {
        url.appendingPathComponent(name)
    }

    /// Removes the folder and everything in it.
    package func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// Runs `body` with a ``TemporaryFolder`` made for it, and removes the folder after.
package func withTemporaryFolder<T>(_ prefix: String = "receiptdash", _ body: (TemporaryFolder) throws -> T) rethrows -> T {
    let folder = TemporaryFolder(prefix)
    defer { folder.remove() }
    return try body(folder)
}

/// Runs `body` with a ``TemporaryFolder`` made for it, and removes the folder after.
package func withTemporaryFolder<T>(_ prefix: String = "receiptdash", _ body: (TemporaryFolder) async throws -> T) async rethrows -> T {
    let folder = TemporaryFolder(prefix)
    defer { folder.remove() }
    return try await body(folder)
}
