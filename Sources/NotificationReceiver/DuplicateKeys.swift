import Foundation

/// Finds a member name written twice in one object of a body's JSON. `JSONValue.parse` keeps
/// one of the two (`{"signedPayload": A, "signedPayload": B}` reads as a single key), so a
/// proxy or logger that reads the other one would see a different notification than the one
/// verified: the receiver refuses such a body instead. Asked only of a body the core's plain
/// reader declined (it declines repeated keys itself), so a genuine notification is scanned
/// once.
enum DuplicateKeys {
    /// The first member name that appears twice in one object, at any depth of `bytes`, or
    /// nil. `bytes` is JSON that `JSONValue.parse` took (nesting already bounded). Names are
    /// compared unescaped (`"a"` and `"\u0061"` are one name), as Swift strings, as the parsed
    /// object's keys are.
    static func first(in bytes: [UInt8]) -> String? {
        bytes.withUnsafeBufferPointer { first(in: $0) }
    }

    private struct Frame {
        /// An object (its names so far), or an array (nil).
        var names: Set<String>?
        /// The next string in this object is a member name.
        var expectingName: Bool
    }

    private static func first(in bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var frames: [Frame] = []
        var offset = 0
        let count = bytes.count
        while offset < count {
            switch bytes[offset] {
            case UInt8(ascii: "{"):
                frames.append(Frame(names: [], expectingName: true))
            case UInt8(ascii: "["):
                frames.append(Frame(names: nil, expectingName: false))
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if !frames.isEmpty { frames.removeLast() }
            case UInt8(ascii: ","):
                if let last = frames.indices.last, frames[last].names != nil { frames[last].expectingName = true }
            case UInt8(ascii: "\""):
                // The string ends at the next quote not escaped (preceded by an even run of
                // backslashes).
                var end = offset + 1
                var escaped = false
                while end < count {
                    let byte = bytes[end]
                    if byte == UInt8(ascii: "\"") && !escaped { break }
                    escaped = byte == UInt8(ascii: "\\") && !escaped
                    end += 1
                }
                guard end < count else { return nil }
                if let last = frames.indices.last, frames[last].expectingName {
                    frames[last].expectingName = false
                    let name = unescaped(UnsafeBufferPointer(rebasing: bytes[offset...end]))
                    if frames[last].names?.insert(name).inserted == false { return name }
                }
                offset = end
            default: break
            }
            offset += 1
        }
        return nil
    }

    /// A quoted JSON string's text: as it is when it holds no escape, else as JSON reads it.
    private static func unescaped(_ quoted: UnsafeBufferPointer<UInt8>) -> String {
        let inner = UnsafeBufferPointer(rebasing: quoted[1..<(quoted.count - 1)])
        guard inner.contains(UInt8(ascii: "\\")) else { return String(decoding: inner, as: UTF8.self) }
        return (try? JSONDecoder().decode(String.self, from: Data(quoted))) ?? String(decoding: inner, as: UTF8.self)
    }
}
