#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension Console {
    /// The process's standard output and error, written at once (a script may be waiting for
    /// the line), and its terminal for questions: what the executable hands the libraries it
    /// runs. A line on standard error may carry text from an input, so ``error(_:)`` escapes it.
    public static let standard = Console(
        errorIsTerminal: isatty(STDERR_FILENO) != 0,
        confirm: { question in
            guard isatty(STDIN_FILENO) != 0 else { return nil }
            Console.put(.error, question)
            let answer = readLine(strippingNewline: true).map { line in
                String(line.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()).lowercased()
            }
            return answer == "y" || answer == "yes"
        },
        sink: { stream, bytes in Console.put(stream, bytes) })

    /// `receiptdash: warning: …` on standard error (escaped: a warning may name a path).
    public func warning(_ warning: String) {
        error("receiptdash: warning: " + warning)
    }

    /// Every byte of `bytes` to the process's `stream` (a write cut short by a signal goes on);
    /// false once the reader has gone (EPIPE).
    @discardableResult public static func put(_ stream: Stream, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return true }
        let descriptor = stream == .output ? STDOUT_FILENO : STDERR_FILENO
        var offset = 0
        while offset < bytes.count {
            let written = systemWrite(descriptor, base + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    private static func put(_ stream: Stream, _ text: String) {
        var text = text
        _ = text.withUTF8 { put(stream, UnsafeRawBufferPointer($0)) }
    }
}

private func systemWrite(_ descriptor: Int32, _ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int {
    #if canImport(Darwin)
    Darwin.write(descriptor, bytes, count)
    #elseif canImport(Glibc)
    Glibc.write(descriptor, bytes, count)
    #else
    Musl.write(descriptor, bytes, count)
    #endif
}
