import Foundation
import ReceiptCore

/// A failed read or write of the audit database. Equality compares only the ``Code``.
public struct AuditError: CodedError {
    public enum Code: String, CaseIterable, CodedErrorCode {
        case writeFailed = "write failed"
        case readFailed = "read failed"
    }

    public let code: Code
    /// What was being done and the database's own words.
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// Wraps a database error `store` threw while doing `what` ("recording the result of #12"),
    /// in the store's own words.
    public init(_ code: Code, doing what: String, _ error: any Error, in store: any AuditBackend) {
        self.init(code, "audit database \(code) \(what): \(store.words(for: error))")
    }
}

/// The words both stores give for errors that are not their database's own.
public enum AuditErrorWords {
    /// Our own audit errors' reasons, and file errors in a sentence; nil for anything else.
    public static func common(_ error: any Error) -> String? {
        if let error = error as? AuditDatabaseError { return error.reason }
        if let error = error as? AuditError { return error.reason }
        if let error = error as? CocoaError {
            let path = error.userInfo[NSFilePathErrorKey] as? String
            let what = path.map { " \($0)" } ?? ""
            switch error.code {
            case .fileNoSuchFile, .fileReadNoSuchFile: return "no such file\(what)"
            case .fileReadNoPermission, .fileWriteNoPermission: return "permission denied\(what)"
            default: return "cannot use the file\(what)"
            }
        }
        return nil
    }
}
