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
public enum Standard {
    /// One line on standard error, escaped.
    public static func error(_ line: String) {
        put(2, SafeText.escaped(line) + "\n")
    }

    /// One line on standard output, as it is: the caller escapes what came from an input.
    public static func line(_ text: String) {
        put(1, text + "\n")
    }

    /// `text` on standard output as it is (a rendering that ends its own lines).
    public static func output(_ text: String) {
        put(1, text)
    }

    /// `text` on standard error as it is (a progress bar's carriage returns and escapes).
    public static func errorRaw(_ text: String) {
        put(2, text)
    }

    private static func put(_ descriptor: Int32, _ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = systemWrite(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
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
