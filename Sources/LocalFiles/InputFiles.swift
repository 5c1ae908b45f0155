import Foundation
import ReceiptCore

#if canImport(Glibc)
import Glibc
private let systemRead = Glibc.read
#elseif canImport(Darwin)
import Darwin
private let systemRead = Darwin.read
#endif

/// Reads inputs: the files and folders named on a command line (a folder's files in name
/// order), `-` for standard input, and pasted text split into receipts. Nothing larger than the
/// decoder's limit is read into memory. The first stage of the one pipeline (``ReceiptPipeline``)
/// that `inspect`, `verify`, `watch` and the dashboard share.
public enum InputFiles {
    /// Where one input comes from, before it is read (``read(_:limit:)``): a file, standard
    /// input, or a name that is neither (its error kept for the report, in order).
    public enum Origin: Sendable, Hashable {
        case file(String)
        case standardInput
        case missing(String)

        /// The name reports give the input (`-` for standard input).
        public var source: String {
            switch self {
            case .file(let path), .missing(let path): path
            case .standardInput: "-"
            }
        }
    }

    /// Reads every input the arguments name, in order.
    public static func load(_ arguments: [String], limit: Int) -> [LoadedInput] {
        origins(arguments).map { read($0, limit: limit) }
    }

    /// The inputs the arguments name, in order, without reading them: so a caller can read
    /// each one where it is judged (on any core) and hold only those in flight in memory.
    public static func origins(_ arguments: [String]) -> [Origin] {
        var origins: [Origin] = []
        for argument in arguments {
            if argument == "-" {
                origins.append(.standardInput)
                continue
            }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) else {
                origins.append(.missing(argument))
                continue
            }
            if isDirectory.boolValue {
                origins += files(in: argument).map(Origin.file)
            } else {
                origins.append(.file(argument))
            }
        }
        return origins
    }

    /// A folder's regular files (links followed), hidden ones left out, in name order: not a
    /// pipe or a socket met in a folder, whose read would wait for a writer. The entry type `readdir` gives spares a `stat` per file; only links and entries
    /// of unknown type are looked at. Over 50,000 files that is 0.1 s where FileManager's
    /// listing, a path joined by NSString and `fileExists` for each took 0.4 s.
    static func files(in folder: String) -> [String] {
        guard let directory = opendir(folder) else { return [] }
        defer { closedir(directory) }
        var base = folder
        while base.count > 1 && base.hasSuffix("/") { base.removeLast() }
        if base != "/" { base += "/" }
        var paths: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard !name.hasPrefix(".") else { continue }
            let path = base + name
            switch Int32(entry.pointee.d_type) {
            case Int32(DT_REG): paths.append(path)
            case Int32(DT_DIR): continue
            default:
                var info = stat()
                if stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG { paths.append(path) }
            }
        }
        // One folder's paths share their start: in name order.
        return paths.sorted()
    }

    /// Reads one input.
    public static func read(_ origin: Origin, limit: Int) -> LoadedInput {
        switch origin {
        case .file(let path): LoadedInput(source: path, result: readFile(path, limit: limit))
        case .standardInput: LoadedInput(source: "-", result: readStandardInput(limit: limit))
        case .missing(let path): LoadedInput(source: path, result: .failure(.init(.emptyInput, "no such file")))
        }
    }

    /// Reads a file with plain system calls into one buffer of the size the file says it has
    /// (FileHandle's `Data` and the copy into an array were a tenth of `inspect`'s time).
    public static func readFile(_ path: String, limit: Int) -> Result<[UInt8], ReceiptDecodingError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            return .failure(.init(.emptyInput, "cannot be opened for reading (\(String(cString: strerror(errno))))"))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            return .failure(.init(.emptyInput, "could not be read: \(String(cString: strerror(errno)))"))
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            // A pipe or a device: its size is not known in advance.
            return read(FileHandle(fileDescriptor: fd, closeOnDealloc: false), limit: limit)
        }
        let size = Int(info.st_size)
        guard size <= limit else {
            return .failure(.init(.inputTooLarge, "input is larger than the \(limit)-byte limit"))
        }
        // One byte more than the size, to notice a file that grew while it was read.
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: size + 1) { buffer, count in
            while count < buffer.count {
                let n = systemRead(fd, buffer.baseAddress! + count, buffer.count - count)
                if n > 0 {
                    count += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    if n < 0 { failure = errno }
                    break
                }
            }
        }
        if failure != 0 {
            return .failure(.init(.emptyInput, "could not be read: \(String(cString: strerror(failure)))"))
        }
        guard bytes.count <= limit else {
            return .failure(.init(.inputTooLarge, "input is larger than the \(limit)-byte limit"))
        }
        return .success(bytes)
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
