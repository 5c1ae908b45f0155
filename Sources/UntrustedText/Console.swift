import Synchronization

/// Where a library's words go. No library writes to the process's standard output or error,
/// or asks a question, by itself: the executable hands in `Console.standard` (its standard
/// streams and terminal), a test a ``ConsoleCapture``'s console.
public struct Console: Sendable {
    public enum Stream: Sendable, Hashable {
        case output, error
    }

    /// Takes bytes for one stream, all of them before it returns.
    public typealias Sink = @Sendable (Stream, UnsafeRawBufferPointer) -> Void

    private let sink: Sink
    /// Whether standard error is a terminal someone watches: a progress bar redraws in place
    /// there, and says nothing elsewhere.
    public let errorIsTerminal: Bool
    /// Asks the person a yes/no question (`send it? [y/N] `); nil when nobody can answer.
    public let confirm: @Sendable (String) -> Bool?

    public init(
        errorIsTerminal: Bool = false, confirm: @escaping @Sendable (String) -> Bool? = { _ in nil }, sink: @escaping Sink
    ) {
        self.errorIsTerminal = errorIsTerminal
        self.confirm = confirm
        self.sink = sink
    }

    /// Bytes as they are (a streaming writer's chunk).
    public func write(_ stream: Stream, _ bytes: UnsafeRawBufferPointer) {
        sink(stream, bytes)
    }

    /// One line on standard error, escaped: it may carry text from an input.
    public func error(_ line: String) {
        put(.error, SafeText.escaped(line) + "\n")
    }

    /// One line on standard output, as it is: the caller escapes what came from an input.
    public func line(_ text: String) {
        put(.output, text + "\n")
    }

    /// `text` on standard output as it is (a rendering that ends its own lines).
    public func output(_ text: String) {
        put(.output, text)
    }

    /// `text` on standard error as it is (a progress bar's carriage returns).
    public func errorRaw(_ text: String) {
        put(.error, text)
    }

    private func put(_ stream: Stream, _ text: String) {
        var text = text
        text.withUTF8 { sink(stream, UnsafeRawBufferPointer($0)) }
    }
}

/// A console that keeps what is written to it, for tests (and answers questions as told).
public final class ConsoleCapture: Sendable {
    private let streams = Mutex<(output: [UInt8], error: [UInt8])>(([], []))

    public init() {}

    /// The console to hand a library; `answer` is what every question gets.
    public func console(errorIsTerminal: Bool = false, answer: Bool? = nil) -> Console {
        Console(errorIsTerminal: errorIsTerminal, confirm: { [self] question in
            streams.withLock { $0.error += Array(question.utf8) }
            return answer
        }) { [self] stream, bytes in
            streams.withLock {
                switch stream {
                case .output: $0.output += bytes
                case .error: $0.error += bytes
                }
            }
        }
    }

    public var output: String { String(decoding: streams.withLock { $0.output }, as: UTF8.self) }
    public var error: String { String(decoding: streams.withLock { $0.error }, as: UTF8.self) }
}
