import Foundation
import Synchronization

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
/// first poll starts at the end unless `fromStart`. Its read position lives in a `Mutex`, so
/// polls from different tasks never interleave.
public final class LogFollower: Sendable {
    public let path: String
    private let fromStart: Bool
    private let state = Mutex(State())
    /// Longest line kept; longer ones are cut (and then skipped as not a receipt).
    static let maximumLineBytes = 8 * 1024 * 1024

    struct State {
        var handle: FileHandle?
        var inode: UInt64 = 0
        var offset: UInt64 = 0
        var partial: [UInt8] = []
        var started = false
    }

    public init(path: String, fromStart: Bool = true) {
        self.path = path
        self.fromStart = fromStart
    }

    /// Complete lines written since the last poll.
    public func poll() -> [String] {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return [] }
        let currentInode = (attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0
        let size = (attributes[.size] as? NSNumber)?.uint64Value ?? 0
        return state.withLock { s in
            if s.handle == nil || currentInode != s.inode || size < s.offset {
                try? s.handle?.close()
                s.handle = FileHandle(forReadingAtPath: path)
                s.inode = currentInode
                s.offset = (!s.started && !fromStart) ? size : 0
                s.partial = []
            }
            s.started = true
            guard let handle = s.handle, size > s.offset else { return [] }
            try? handle.seek(toOffset: s.offset)
            let data = (try? handle.read(upToCount: Int(min(size - s.offset, 64 * 1024 * 1024)))) ?? Data()
            s.offset += UInt64(data.count)
            var lines: [String] = []
            for byte in data {
                if byte == 0x0A {
                    lines.append(String(decoding: s.partial, as: UTF8.self))
                    s.partial.removeAll(keepingCapacity: true)
                } else if s.partial.count < Self.maximumLineBytes {
                    s.partial.append(byte)
                }
            }
            return lines
        }
    }
}

/// Watches a folder: each new file is reported once, when its size has stopped changing
/// between two polls (so a file still being written is not read half-way). What it has
/// reported lives in a `Mutex`.
public final class FolderWatcher: Sendable {
    public let path: String
    private let state = Mutex(State())

    struct State {
        var reported: Set<String> = []
        var sizes: [String: UInt64] = [:]
    }

    public init(path: String) {
        self.path = path
    }

    /// Paths of files that appeared and settled since the last poll. With `settled: false`,
    /// every regular file not yet reported, at once (for a one-shot pass over the folder).
    public func poll(settled: Bool = true) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return [] }
        return state.withLock { s in
            var ready: [String] = []
            for name in names.sorted() where !name.hasPrefix(".") {
                let file = (path as NSString).appendingPathComponent(name)
                guard !s.reported.contains(file),
                    let attributes = try? FileManager.default.attributesOfItem(atPath: file),
                    attributes[.type] as? FileAttributeType == .typeRegular
                else { continue }
                let size = (attributes[.size] as? NSNumber)?.uint64Value ?? 0
                if !settled || (s.sizes[file] == size && size > 0) {
                    s.reported.insert(file)
                    s.sizes[file] = nil
                    ready.append(file)
                } else {
                    s.sizes[file] = size
                }
            }
            return ready
        }
    }
}
