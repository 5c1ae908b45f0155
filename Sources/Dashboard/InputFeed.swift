import Foundation
import ReceiptCore

/// New inputs arriving from watched sources (folders, followed log files), offered to the
/// dashboard on each tick. The executable implements it with the ReceiptWatch watchers (DashboardLive).
public protocol InputFeed: Sendable {
    /// Inputs that arrived since the last poll: a file's bytes (or why it could not be read),
    /// or one log line that holds a receipt, each with where it came from.
    func poll() -> [LoadedInput]
}
