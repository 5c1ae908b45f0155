import Foundation
import ReceiptCore

/// One input named on the command line, read into memory.
public struct LoadedInput: Sendable {
    public var source: String
    public var result: Result<[UInt8], ReceiptDecodingError>

    public init(source: String, result: Result<[UInt8], ReceiptDecodingError>) {
        self.source = source
        self.result = result
    }
}

/// Reads the inputs named on the command line: files, folders (their files, sorted), `-` for
/// standard input. Nothing larger than the decoder's limit is read into memory.
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
}
