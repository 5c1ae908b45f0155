import Foundation
import Glibc
import Synchronization

/// Runs the built `receiptdash` binary as a user would: arguments, optional standard input, and
/// both output streams read at the same time to their end, so a command that writes more than a
/// pipe holds (64 KiB) to one stream while the other is unread cannot stall the test.
enum CLIRunner {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        var json: Any? { try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) }
    }

    /// The built executable: the test bundle sits in the products folder next to it.
    static var binary: URL {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 where !FileManager.default.fileExists(atPath: dir.appendingPathComponent("receiptdash").path) {
            dir.deleteLastPathComponent()
        }
        return dir.appendingPathComponent("receiptdash")
    }

    /// - Parameters:
    ///   - environment: the process's whole environment; nil: this process's.
    ///   - executable: another binary than the built one (an installed copy).
    ///
    /// Started with `posix_spawn`, not Foundation's `Process`: on Linux its `run()` lists
    /// `/proc/self/fd` by copying whole `dirent` names past glibc's buffer and crashes now and
    /// then (swift-corelibs-foundation#5472, seen here twice in a full run). The child gets the
    /// three pipes and no other descriptor of this process (`addclosefrom_np`).
    static func run(
        _ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil, currentDirectory: URL? = nil,
        executable: URL? = nil
    ) async throws -> Run {
        // Waited for on a thread of Dispatch's, never on one of the two cooperative threads of
        // a 2-core machine: a command talking to a server of this test process (a simulator,
        // a scripted server) needs those threads to be answered, and two commands blocking
        // both stalled every test of the run until their own timeouts.
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    with: Result {
                        try blocking(arguments, stdin: stdin, environment: environment, currentDirectory: currentDirectory, executable: executable)
                    })
            }
        }
    }

    /// ``run(_:stdin:environment:currentDirectory:executable:)`` on the calling thread.
    static func blocking(
        _ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil, currentDirectory: URL? = nil,
        executable: URL? = nil
    ) throws -> Run {
        let input = try Self.pipe(), out = try Self.pipe(), err = try Self.pipe()
        let pid: pid_t
        do {
            pid = try spawn(
                (executable ?? binary).path, arguments, environment: environment ?? ProcessInfo.processInfo.environment,
                directory: currentDirectory?.path, stdin: input.read, stdout: out.write, stderr: err.write)
        } catch {
            for fd in [input.read, input.write, out.read, out.write, err.read, err.write] { close(fd) }
            throw error
        }
        for fd in [input.read, out.write, err.write] { close(fd) }
        // Standard error and standard input on threads of their own, standard output here.
        let group = DispatchGroup()
        let errData = Drained()
        DispatchQueue.global().async(group: group) { errData.set(Self.readAll(err.read)) }
        DispatchQueue.global().async(group: group) {
            if let stdin {
                stdin.withUnsafeBytes { bytes in
                    var offset = 0
                    while offset < bytes.count {
                        let n = write(input.write, bytes.baseAddress! + offset, bytes.count - offset)
                        if n < 0 && errno == EINTR { continue }
                        if n <= 0 { break }
                        offset += n
                    }
                }
            }
            close(input.write)
        }
        let outData = Self.readAll(out.read)
        group.wait()
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // As Foundation says it: the exit status, or the number of the signal that ended it.
        let code = status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
        return Run(status: code, stdout: String(decoding: outData, as: UTF8.self), stderr: String(decoding: errData.get(), as: UTF8.self))
    }

    struct SpawnError: Error, CustomStringConvertible {
        var description: String
    }

    private static func pipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        // Close-on-exec (pipe2 is not declared here): children started otherwise do not keep them.
        guard Glibc.pipe(&fds) == 0 else { throw SpawnError(description: "pipe failed (errno \(errno))") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }

    /// Reads `fd` to its end, then closes it.
    private static func readAll(_ fd: Int32) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            data.append(contentsOf: buffer[0..<n])
        }
        close(fd)
        return data
    }

    private typealias AddInt = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias AddPath = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    /// glibc's (2.34+) `posix_spawn_file_actions_addclosefrom_np` and `…_addchdir_np`, which
    /// Swift's Glibc module does not declare.
    private static func glibc<T>(_ name: String, as type: T.Type) throws -> T {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
            throw SpawnError(description: "\(name) is not in this C library")
        }
        return unsafeBitCast(symbol, to: type)
    }

    private static func spawn(
        _ path: String, _ arguments: [String], environment: [String: String], directory: String?, stdin: Int32, stdout: Int32, stderr: Int32
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        guard try glibc("posix_spawn_file_actions_addclosefrom_np", as: AddInt.self)(&actions, 3) == 0 else {
            throw SpawnError(description: "posix_spawn_file_actions_addclosefrom_np failed")
        }
        if let directory {
            guard try glibc("posix_spawn_file_actions_addchdir_np", as: AddPath.self)(&actions, directory) == 0 else {
                throw SpawnError(description: "posix_spawn_file_actions_addchdir_np failed")
            }
        }
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard result == 0 else { throw SpawnError(description: "\(path) could not be started: \(String(cString: strerror(result)))") }
        return pid
    }

    /// What a reader thread read, handed to the test's thread.
    private final class Drained: Sendable {
        private let data = Mutex(Data())
        func set(_ value: Data) { data.withLock { $0 = value } }
        func get() -> Data { data.withLock { $0 } }
    }
}

import Testing
import TestSupport

/// The runner itself: what a command writes to either stream arrives whole, however much.
@Suite struct CLIRunnerTests {
    /// 2,000 missing files: over 100 KiB of errors on standard error, more than a pipe holds,
    /// read while standard output is read too.
    @Test func moreThanAPipeOnStandardErrorIsReadWhole() async throws {
        let words = Wording("cli-runner")
        let paths = (1...2000).map { "/nonexistent/receipt-\($0)-\(String(repeating: "x", count: 8)).b64" }
        let run = try await CLIRunner.run(["inspect"] + paths)
        #expect(run.status == 1)
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 2000)
        words.said(lines.last)
        #expect(run.stderr.utf8.count > 64 << 10)
        words.check()
    }
}
