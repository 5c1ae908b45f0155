import Foundation

/// New inputs arriving from watched sources (folders, followed log files), offered to the
/// dashboard on each tick. The executable implements it with the ReceiptService watchers.
public protocol InputFeed: Sendable {
    /// Inputs that arrived since the last poll: a file's bytes, or one log line that holds a
    /// receipt, with where it came from.
    func poll() -> [(source: String, bytes: [UInt8])]
}
