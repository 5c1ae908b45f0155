import Foundation
import UntrustedText

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's standard output and error, written at once (a script may be waiting for the
/// line). A line on standard error may carry text from an input (a file name, a key in an error
/// message), so every line written there goes through the one sanitiser.
enum Standard {
    /// One line on standard error, escaped.
    static func error(_ line: String) {
        put(2, SafeText.escaped(line) + "\n")
    }

    /// One line on standard output, as it is: the caller escapes what came from an input.
    static func line(_ text: String) {
        put(1, text + "\n")
    }

    /// `text` on standard output as it is (a rendering that ends its own lines).
    static func output(_ text: String) {
        put(1, text)
    }

    /// `text` on standard error as it is (a progress bar's carriage returns and escapes).
    static func errorRaw(_ text: String) {
        put(2, text)
    }

    /// `receiptdash: warning: …` on standard error (escaped: a warning may name a path).
    @Sendable static func warning(_ warning: String) {
        error("receiptdash: warning: " + warning)
    }

    private static func put(_ descriptor: Int32, _ text: String) {
        var text = text
        _ = text.withUTF8 { put(descriptor, UnsafeRawBufferPointer($0)) }
    }

    /// Every byte of `bytes` to `descriptor` (a write cut short by a signal goes on); false once
    /// the reader has gone (EPIPE).
    @discardableResult static func put(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return true }
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
}

extension Console {
    /// The process's standard output and error, and its terminal for questions: what every
    /// command hands the libraries it runs.
    static let standard = Console(
        errorIsTerminal: isatty(STDERR_FILENO) != 0,
        confirm: { question in
            guard isatty(STDIN_FILENO) != 0 else { return nil }
            Standard.errorRaw(question)
            let answer = readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces).lowercased()
            return answer == "y" || answer == "yes"
        },
        sink: { stream, bytes in Standard.put(stream == .output ? STDOUT_FILENO : STDERR_FILENO, bytes) })
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
