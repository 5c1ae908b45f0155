import Foundation

/// `--forward-header-file FILE`: headers every delivery carries, one `Name: value` a line (such
/// as `Authorization: Bearer …`), for a downstream that wants a credential beside the
/// signature. The values are secrets: never printed, logged or stored; the description shows
/// the names only.
public struct ForwardHeaders: Sendable, CustomStringConvertible {
    public let fields: [(String, String)]

    /// Headers forwarding sets itself, which a file may not replace.
    static let reserved: Set<String> = ["content-type", "content-length", "host", "user-agent", "webhook-id", "webhook-timestamp", "webhook-signature", "transfer-encoding", "connection"]

    /// Reads the file's text: blank lines and `#` comments passed by; a name is an HTTP token, a
    /// value has no control characters. Errors name the line, never its value.
    public init(_ text: String) throws(ForwardError) {
        var fields: [(String, String)] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
            guard let colon = line.firstIndex(of: ":") else {
                throw ForwardError(.header, "line \(number + 1) is not Name: value")
            }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            let token = Set("!#$%&'*+-.^_`|~".utf8)
            guard !name.isEmpty, name.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0 & ~0x20) || token.contains($0) }) else {
                throw ForwardError(.header, "line \(number + 1): the name is not an HTTP header name")
            }
            guard !Self.reserved.contains(name.lowercased()) else {
                throw ForwardError(.header, "line \(number + 1): \(name) is set by forwarding itself")
            }
            guard !value.isEmpty, value.unicodeScalars.allSatisfy({ $0 == "\t" || ($0.value >= 0x20 && $0.value != 0x7F) }) else {
                throw ForwardError(.header, "line \(number + 1): the value of \(name) is empty or holds a control character")
            }
            fields.append((name, value))
        }
        guard !fields.isEmpty else { throw ForwardError(.header, "no Name: value line in it") }
        self.fields = fields
    }

    public var description: String { fields.map { "\($0.0): ••••" }.joined(separator: ", ") }
}
