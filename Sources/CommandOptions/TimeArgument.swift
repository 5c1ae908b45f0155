import ArgumentParser
import Foundation
import ReceiptCore

/// The times commands take (`--since`, `--start`, `--end`, `--at`), read by
/// ``AppleDate/parseArgument(_:)``.
public enum TimeArgument {
    public static func parse(_ text: String) -> Date? { AppleDate.parseArgument(text) }

    /// A usage error naming `flag` when `value` is given and is not a time.
    public static func check(_ flag: String, _ value: String?) throws {
        if let value, parse(value) == nil { throw ValidationError("\(flag) \(AppleDate.argumentExpected).") }
    }
}
