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

/// Reads inputs: the files and folders named on a command line (a folder's files in name
/// order), `-` for standard input, and pasted text split into receipts. Nothing larger than the
/// decoder's limit is read into memory. The first stage of the one pipeline (``ReceiptPipeline``)
/// that `inspect`, `verify`, `watch` and the dashboard share.
public enum InputFiles {
    public static func load(_ arguments: [String], limit: Int) -> [LoadedInput] {
        var inputs: [LoadedInput] = []
        for argument in arguments {
            if argument == "-" {
                inputs.append(LoadedInput(source: "-", result: readStandardInput(limit: limit)))
                continue
            }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) else {
                inputs.append(LoadedInput(source: argument, result: .failure(.init(.emptyInput, "no such file"))))
                continue
            }
            if isDirectory.boolValue {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: argument)) ?? []
                for name in names.sorted() where !name.hasPrefix(".") {
                    let path = (argument as NSString).appendingPathComponent(name)
                    var nestedIsDirectory: ObjCBool = false
                    if FileManager.default.fileExists(atPath: path, isDirectory: &nestedIsDirectory),
                        !nestedIsDirectory.boolValue
                    {
                        inputs.append(LoadedInput(source: path, result: readFile(path, limit: limit)))
                    }
                }
            } else {
                inputs.append(LoadedInput(source: argument, result: readFile(argument, limit: limit)))
            }
        }
        return inputs
    }

    public static func readFile(_ path: String, limit: Int) -> Result<[UInt8], ReceiptDecodingError> {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            return .failure(.init(.emptyInput, "cannot be opened for reading"))
        }
        defer { try? handle.close() }
        return read(handle, limit: limit)
    }

    public static func readStandardInput(limit: Int) -> Result<[UInt8], ReceiptDecodingError> {
        read(FileHandle.standardInput, limit: limit)
    }

    private static func read(_ handle: FileHandle, limit: Int) -> Result<[UInt8], ReceiptDecodingError> {
        do {
            let data = try handle.read(upToCount: limit + 1) ?? Data()
            guard data.count <= limit else {
                return .failure(.init(.inputTooLarge, "input is larger than the \(limit)-byte limit"))
            }
            return .success([UInt8](data))
        } catch {
            return .failure(.init(.emptyInput, "could not be read: \(error.localizedDescription)"))
        }
    }

    /// The inputs of the bundled demo, named `demo/NAME`.
    public static func demo() -> [LoadedInput] {
        DemoCorpus.items().map { LoadedInput(source: "demo/\($0.name)", result: .success($0.bytes)) }
    }

    /// Splits pasted text into receipts: blocks separated by blank lines; within a block, one
    /// receipt per line when every line decodes on its own, else the block is one receipt
    /// (base64 wrapped over several lines). Sources are `paste N`, counting on from `firstNumber`.
    public static func paste(_ text: String, firstNumber: Int = 1, decoder: ReceiptDecoder = ReceiptDecoder()) -> [LoadedInput] {
        let normalised = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
        let blocks = normalised.components(separatedBy: "\n\n").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            .filter { !$0.isEmpty }
        let chunks = blocks.flatMap { block -> [String] in
            let lines = block.components(separatedBy: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            if lines.count >= 2, lines.allSatisfy({ (try? decoder.decode(text: $0)) != nil }) { return lines }
            return [block]
        }
        return chunks.enumerated().map { LoadedInput(source: "paste \(firstNumber + $0.offset)", result: .success(Array($0.element.utf8))) }
    }
}
