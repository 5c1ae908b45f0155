import Foundation
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
    static func run(
        _ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil, currentDirectory: URL? = nil,
        executable: URL? = nil
    ) throws -> Run {
        let process = Process()
        process.executableURL = executable ?? binary
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        let out = Pipe()
        let err = Pipe()
        let input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        // Standard error and standard input on threads of their own, standard output here.
        let group = DispatchGroup()
        let errData = Drained()
        DispatchQueue.global().async(group: group) { errData.set(err.fileHandleForReading.readDataToEndOfFile()) }
        DispatchQueue.global().async(group: group) {
            if let stdin { try? input.fileHandleForWriting.write(contentsOf: stdin) }
            try? input.fileHandleForWriting.close()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData.get(), as: UTF8.self))
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
    @Test func moreThanAPipeOnStandardErrorIsReadWhole() throws {
        let words = Wording("cli-runner")
        let paths = (1...2000).map { "/nonexistent/receipt-\($0)-\(String(repeating: "x", count: 8)).b64" }
        let run = try CLIRunner.run(["inspect"] + paths)
        #expect(run.status == 1)
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 2000)
        words.said(lines.last)
        #expect(run.stderr.utf8.count > 64 << 10)
        words.check()
    }
}
