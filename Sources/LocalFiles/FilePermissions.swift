import Foundation
import ReceiptCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Who may read the files receiptdash keeps secrets and customers' receipts in: the check of a
/// secret file's mode (the shared secret, the API `.p8` key, the receiver's TLS key), and the
/// creation of the audit database owner-only.
public enum FilePermissions {
    /// A warning when the file at `path` can be read by its group or by every user of the
    /// machine; nil when only its owner can (or when it cannot be examined: reading it says why).
    /// `what` names the file in the sentence (`the private key file`).
    ///
    /// `the private key file k.p8 is readable by every user of this machine (mode 644): chmod 600 k.p8`
    public static func readableByOthersWarning(path: String, what: String) -> String? {
        guard case .success(let readers) = readers(path: path), let others = readers.others else { return nil }
        return "\(what) \(path) is readable by \(others) (mode \(readers.octalMode)): chmod 600 \(path)"
    }

    /// Who besides its owner may read a file: its permission bits, and `every user of this
    /// machine`, `its group` or nil (its owner only).
    public struct Readers: Sendable, Hashable {
        public var mode: Int
        public var others: String? {
            mode & 0o004 != 0 ? "every user of this machine" : mode & 0o040 != 0 ? "its group" : nil
        }
        /// `644`.
        public var octalMode: String { String(mode, radix: 8) }
    }

    /// The file's ``Readers``, or why it cannot be examined (`strerror`).
    public static func readers(path: String) -> Result<Readers, FileExaminationError> {
        var info = stat()
        guard stat(path, &info) == 0 else { return .failure(FileExaminationError(reason: String(cString: strerror(errno)))) }
        return .success(Readers(mode: Int(info.st_mode) & 0o777))
    }

    /// Creates the directory at `path` and any missing parents, each one created here with mode
    /// 0700 (whatever the umask: the mode is set after `mkdir`); directories that exist already
    /// are left as they are.
    public static func createPrivateDirectory(atPath path: String) throws {
        var missing: [String] = []
        var current = path
        while !current.isEmpty, current != "/", !FileManager.default.fileExists(atPath: current) {
            missing.append(current)
            current = PathNames.parent(of: current)
        }
        for directory in missing.reversed() {
            if mkdir(directory, 0o700) != 0 {
                let code = errno
                // Made by someone else meanwhile: theirs, left as it is.
                if code == EEXIST { continue }
                throw FileCreationError(path: directory, what: "directory", errno: code)
            }
            _ = chmod(directory, 0o700)
        }
    }

    /// Creates an empty file at `path` with mode 0600 unless something is there already;
    /// whether it was created here.
    ///
    /// `O_CREAT | O_EXCL` with mode 0600, then `fchmod` on the descriptor so an odd umask cannot
    /// leave another mode: no moment exists at which the file is readable by others, and
    /// nothing process-wide (the umask) is changed under other threads.
    @discardableResult
    public static func createPrivateFile(atPath path: String) throws -> Bool {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if descriptor < 0 {
            let code = errno
            if code == EEXIST { return false }
            throw FileCreationError(path: path, what: "file", errno: code)
        }
        _ = fchmod(descriptor, 0o600)
        close(descriptor)
        return true
    }

    /// Sets the mode of each of `paths` that exists to 0600.
    public static func restrictToOwner(_ paths: [String]) {
        for path in paths where FileManager.default.fileExists(atPath: path) { _ = chmod(path, 0o600) }
    }
}

/// A directory or file that could not be created: `cannot create the directory /x/y: Permission
/// denied`. Compared by code; ``errno`` is the system's reason.
public struct FileCreationError: CodedError {
    public enum Code: String, CodedErrorCode, CaseIterable {
        case cannotCreateDirectory = "cannot-create-directory"
        case cannotCreateFile = "cannot-create-file"
    }

    public let code: Code
    public let path: String
    public let errno: Int32

    public init(path: String, what: String, errno: Int32) {
        self.code = what == "directory" ? .cannotCreateDirectory : .cannotCreateFile
        self.path = path
        self.errno = errno
    }

    public var what: String { code == .cannotCreateDirectory ? "directory" : "file" }
    public var reason: String { "cannot create the \(what) \(path): \(String(cString: strerror(errno)))" }
}

/// A file whose mode could not be read, and why.
public struct FileExaminationError: Error, Sendable, Hashable {
    public var reason: String
}
