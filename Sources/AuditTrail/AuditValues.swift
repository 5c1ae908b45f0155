import ReceiptCore
import ReceiptTrust

/// Where a receipt row is in verification. The raw values are what both stores write to the
/// `receipt.state` column (and `history` prints): a contract, add and never rename.
public enum ReceiptState: String, Sendable, Hashable, CaseIterable {
    /// Recorded, never sent for verification (the column's default).
    case decoded
    /// Queued for verification (`verify --resume` sends it).
    case pending
    /// Apple answered with a status.
    case done
    /// Verification ended without Apple's status (the failure columns say why).
    case failed

    /// The state a verification leaves: done when Apple answered, else failed.
    public static func verified(failed: Bool) -> ReceiptState { failed ? .failed : .done }

    /// Whether a verification ended here (done or failed): `db copy` lets such a row's result
    /// replace one that never ended.
    public var isFinal: Bool { self == .done || self == .failed }

    /// The state of a stored value; a value this version does not know is a read failure.
    package init(stored: String) throws(AuditError) {
        guard let state = ReceiptState(rawValue: stored) else {
            throw AuditError(.readFailed, "audit database read failed: receipt state '\(stored)' is not one this version knows")
        }
        self = state
    }
}

/// Which App Store Server Notifications version a stored notification came as. The raw values
/// are what both stores write to `notification.version`.
public enum NotificationVersion: String, Sendable, Hashable, CaseIterable {
    /// Version 1: a JSON body with the shared secret, unsigned.
    case v1 = "1"
    /// Version 2: a signed `signedPayload`.
    case v2 = "2"

    /// The version of a stored value; a value this version does not know is a read failure.
    package init(stored: String) throws(AuditError) {
        guard let version = NotificationVersion(rawValue: stored) else {
            throw AuditError(.readFailed, "audit database read failed: notification version '\(stored)' is not one this version knows")
        }
        self = version
    }
}

extension TrustReport.Verdict {
    /// A stored notification's verdict (`notification.verdict` holds the raw value); a value
    /// this version does not know is a read failure.
    package init(stored: String) throws(AuditError) {
        guard let verdict = TrustReport.Verdict(rawValue: stored) else {
            throw AuditError(.readFailed, "audit database read failed: notification verdict '\(stored)' is not one this version knows")
        }
        self = verdict
    }
}
