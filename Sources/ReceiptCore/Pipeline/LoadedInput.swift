import Foundation

/// One input read into memory (a file, standard input, a pasted chunk, a watched line), or why
/// it could not be read, with where it came from.
public struct LoadedInput: Sendable, Hashable {
    public var source: String
    public var result: Result<[UInt8], ReceiptDecodingError>

    public init(source: String, result: Result<[UInt8], ReceiptDecodingError>) {
        self.source = source
        self.result = result
    }
}
