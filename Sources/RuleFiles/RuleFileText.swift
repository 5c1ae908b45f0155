import Foundation
import TOMLKit

/// Why a rules file cannot be read as TOML: words naming the file (and its line, when the text
/// says where).
public struct RuleFileFault: Error, Sendable {
    public let words: String
    public let line: Int?
}

/// Reading a rules file: bounded, UTF-8, TOML, every fault naming the file.
public enum RuleFileText {
    /// The largest rules file read.
    public static let maximumBytes = 4 << 20

    /// The text of the file at `path`.
    public static func read(path: String) throws(RuleFileFault) -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw RuleFileFault(words: "\(path) cannot be read", line: nil) }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: maximumBytes + 1) ?? Data() else {
            throw RuleFileFault(words: "\(path) cannot be read", line: nil)
        }
        guard data.count <= maximumBytes else { throw RuleFileFault(words: "\(path) is larger than 4 MiB", line: nil) }
        guard let text = String(validating: [UInt8](data), as: UTF8.self) else { throw RuleFileFault(words: "\(path) is not UTF-8 text", line: nil) }
        return text
    }

    /// `text` as a TOML table.
    public static func table(_ text: String, path: String) throws(RuleFileFault) -> TOMLTable {
        do {
            return try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw RuleFileFault(words: "\(path) line \(error.source.begin.line): \(error.description)", line: Int(error.source.begin.line))
        } catch {
            throw RuleFileFault(words: "\(path) is not TOML: \(error)", line: nil)
        }
    }

    /// Whether `name` can name a rule or policy: at most 200 bytes of printable text.
    public static func isPrintableName(_ name: String) -> Bool {
        name.utf8.count <= 200 && name.unicodeScalars.allSatisfy { $0.properties.generalCategory != .control && $0.properties.generalCategory != .format }
    }
}
