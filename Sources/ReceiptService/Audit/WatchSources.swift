import Foundation

/// What `watch` and the dashboard's `--watch` are given, sorted by kind: a folder is watched
/// for new files, `-` is standard input, and anything else is a log file followed like `tail -F`.
public struct WatchedSources: Sendable {
    public var folders: [FolderWatcher] = []
    public var logs: [LogFollower] = []
    public var readsStandardInput = false

    public init(_ sources: [String], logsFromStart: Bool) {
        for source in sources {
            var isDirectory: ObjCBool = false
            if source == "-" {
                readsStandardInput = true
            } else if FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory), isDirectory.boolValue {
                folders.append(FolderWatcher(path: source))
            } else {
                logs.append(LogFollower(path: source, fromStart: logsFromStart))
            }
        }
    }
}

/// Follows a log file like `tail -F`: new complete lines on each poll; a rotated file (new
/// inode) or a truncated one (shorter than what was read) is read again from its start. The
/// first poll starts at the end unless `fromStart`.
public final class LogFollower: @unchecked Sendable {
    public let path: String
    private var handle: FileHandle?
    private var inode: UInt64 = 0
    private var offset: UInt64 = 0
    private var partial: [UInt8] = []
    private var started = false
    private let fromStart: Bool
    /// Longest line kept; longer ones are cut (and then skipped as not a receipt).
    static let maximumLineBytes = 8 * 1024 * 1024

    public init(path: String, fromStart: Bool = true) {
        self.path = path
        self.fromStart = fromStart
    }

    /// Complete lines written since the last poll.
    public func poll() -> [String] {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return [] }
        let currentInode = (attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0
        let size = (attributes[.size] as? NSNumber)?.uint64Value ?? 0
        if handle == nil || currentInode != inode || size < offset {
            try? handle?.close()
            handle = FileHandle(forReadingAtPath: path)
            inode = currentInode
            offset = (!started && !fromStart) ? size : 0
            partial = []
        }
        started = true
        guard let handle, size > offset else { return [] }
        try? handle.seek(toOffset: offset)
        let data = (try? handle.read(upToCount: Int(min(size - offset, 64 * 1024 * 1024)))) ?? Data()
        offset += UInt64(data.count)
        var lines: [String] = []
        for byte in data {
            if byte == 0x0A {
                lines.append(String(decoding: partial, as: UTF8.self))
                partial.removeAll(keepingCapacity: true)
            } else if partial.count < Self.maximumLineBytes {
                partial.append(byte)
            }
        }
        return lines
    }
}

/// Watches a folder: each new file is reported once, when its size has stopped changing
/// between two polls (so a file still being written is not read half-way).
public final class FolderWatcher: @unchecked Sendable {
    public let path: String
    private var reported: Set<String> = []
    private var sizes: [String: UInt64] = [:]

    public init(path: String) {
        self.path = path
    }

    /// Paths of files that appeared and settled since the last poll. With `settled: false`,
    /// every regular file not yet reported, at once (for a one-shot pass over the folder).
    public func poll(settled: Bool = true) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return [] }
        var ready: [String] = []
        for name in names.sorted() where !name.hasPrefix(".") {
            let file = (path as NSString).appendingPathComponent(name)
            guard !reported.contains(file),
                let attributes = try? FileManager.default.attributesOfItem(atPath: file),
                attributes[.type] as? FileAttributeType == .typeRegular
            else { continue }
            let size = (attributes[.size] as? NSNumber)?.uint64Value ?? 0
            if !settled || (sizes[file] == size && size > 0) {
                reported.insert(file)
                sizes[file] = nil
                ready.append(file)
            } else {
                sizes[file] = size
            }
        }
        return ready
    }
}
