// The terminal escape-sequence / bracketed-paste parser.
//
// Input format: the first byte picks the paste limit (0…255 scalars, so the "text past the
// limit is dropped" branch is reached); the rest is the stream after an ESC, one code point
// per byte, except that 0xFF takes the next three bytes as one big-endian code point (so
// non-ASCII scalars and values that are no Unicode scalar at all reach the parser). The end of
// the input is a read timeout.
import Foundation
import TerminalUI

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzKeys(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    guard let limitByte = bytes.first else { return 0 }
    var stream: [UInt32] = []
    var i = 1
    while i < bytes.count {
        if bytes[i] == 0xFF, i + 3 < bytes.count {
            stream.append(UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8 | UInt32(bytes[i + 3]))
            i += 4
        } else {
            stream.append(UInt32(bytes[i]))
            i += 1
        }
    }
    // Read as the ncurses backend does: code points are keys; an ESC hands the stream to the
    // parser; whatever it pushes back is read again first.
    var position = 0
    var pushedBack: [UInt32] = []
    var reads = 0
    func nextCode() -> UInt32? {
        reads += 1
        precondition(reads <= 10 * stream.count + 2, "code points are read again and again")
        if !pushedBack.isEmpty { return pushedBack.removeFirst() }
        guard position < stream.count else { return nil }
        defer { position += 1 }
        return stream[position]
    }
    while let code = nextCode() {
        guard code == 0x1B else { continue }
        var consumed: [UInt32] = []
        let event = EscapeSequenceParser.parse(
            next: { _ in
                let c = nextCode()
                if let c { consumed.append(c) }
                return c
            },
            pushBack: { back in
                precondition(back == consumed, "pushed back something other than what it read")
                pushedBack.insert(contentsOf: back, at: 0)
            },
            maximumPaste: Int(limitByte))
        if case .paste(let text) = event {
            precondition(text.unicodeScalars.count <= Int(limitByte), "paste longer than its limit")
        }
    }
    return 0
}

// Built without -sanitize=fuzzer (a plain `swift build --package-path Fuzz`, as CI checks that the
// harnesses still compile), this is the program: each file named runs once through the harness,
// as libFuzzer replays an input. A fuzzing build links libFuzzer's `main` instead.
for path in CommandLine.arguments.dropFirst() {
    let bytes = [UInt8](FileManager.default.contents(atPath: path) ?? Data()) + [0]
    _ = bytes.withUnsafeBufferPointer { fuzzKeys($0.baseAddress!, $0.count - 1) }
}
