import LocalFiles
import ReceiptCore
import Foundation

/// The app-specific shared secret for `verifyReceipt`.
///
/// It comes from `RECEIPTDASH_SHARED_SECRET` or a file, never from a command-line argument.
/// Every representation is masked (`••••…3f2a`): `description`, `debugDescription`, and its
/// reflection (`dump()`, `Mirror`, what a test failure or debugger prints), so it cannot reach
/// logs, errors or output; only the request body builder and the simulator read ``value``.
public struct SharedSecret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package let value: String

    public init(_ value: String) {
        self.value = value.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The environment variable the secret is read from.
    public static let environmentVariable = "RECEIPTDASH_SHARED_SECRET"

    /// From `--shared-secret-file` if given, else the environment variable; nil if neither.
    /// A file its group or others can read is used, with a warning handed to `warn` (by
    /// default written on standard error), as the API `.p8` key is.
    public static func load(
        file: String?, environment: [String: String], warn: (String) -> Void
    ) throws -> SharedSecret? {
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw SecretError(.unreadable, message: "the shared secret file \(file) cannot be read")
            }
            if let warning = FilePermissions.readableByOthersWarning(path: file, what: "the shared secret file") { warn(warning) }
            let secret = SharedSecret(String(decoding: data, as: UTF8.self))
            guard !secret.value.isEmpty else { throw SecretError(.empty, message: "the shared secret file \(file) is empty") }
            return secret
        }
        if let value = environment[environmentVariable], !value.isEmpty { return SharedSecret(value) }
        return nil
    }

    /// Masked: the length and the last four characters at most, for telling secrets apart.
    public var masked: String {
        value.count <= 8 ? String(repeating: "•", count: value.count) : "••••…" + value.suffix(4)
    }

    public var description: String { masked }
    public var debugDescription: String { "SharedSecret(\(masked))" }
    /// One masked child: `dump()` and `Mirror` never see the value.
    public var customMirror: Mirror { Mirror(self, children: ["masked": masked], displayStyle: .struct) }

    /// Whether `candidate` is this secret (the simulator's check of a request's password).
    public func matches(_ candidate: String) -> Bool { candidate == value }

    /// A shared secret file that cannot be used, compared by code.
    public struct SecretError: CodedError {
        public enum Code: String, CodedErrorCode, CaseIterable {
            case unreadable = "unreadable-secret-file"
            case empty = "empty-secret-file"
        }

        public let code: Code
        public let reason: String
        /// The reason (as it was called before it had a code).
        public var message: String { reason }

        public init(_ code: Code, message: String) {
            self.code = code
            self.reason = message
        }
    }
}
