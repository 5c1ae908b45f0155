import Foundation
import ReceiptSimulator
import Synchronization
import Testing
import TestSupport

/// A write to Apple is recorded before its first byte leaves: a process killed between the
/// send and the record leaves a `pending` row, shown as `unknown` with the command that repeats
/// it safely, and that command's request id makes Apple apply it once.
@Suite struct WriteRecordingTests {
    static let subscription = ActionCommandsTests.subscription

    /// What happened first: the simulator took the write, or the process ended.
    enum First: Sendable { case written, exited }

    /// Resumes its continuation once, with whichever event came first.
    final class FirstOf: Sendable {
        private let continuation: Mutex<CheckedContinuation<First, Never>?>
        init(_ continuation: CheckedContinuation<First, Never>) { self.continuation = Mutex(continuation) }
        func resume(_ first: First) { continuation.withLock { $0.take() }?.resume(returning: first) }
    }

    /// A write command started against `setup`'s simulator and awaited until its request
    /// reached the simulator (or the process ended first): then a test signals it.
    final class InFlight {
        let process = Process()
        let out = Pipe()
        let err = Pipe()
        var first: First = .exited

        /// - Parameter maskSignals: start it with SIGINT and SIGTERM blocked in every thread (as
        ///   a process started from a dispatch worker or a test runner inherits them): python
        ///   blocks them and execs the binary, which keeps the mask and the pid.
        /// - Parameter signal: sent by the simulator's thread the moment it takes the write, so
        ///   a test task starved by the parallel suite cannot send it after the answer came.
        init(_ setup: ActionCommandsTests.Setup, _ arguments: [String], maskSignals: Bool = false, signal: Int32) async {
            if maskSignals {
                process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                process.arguments =
                    [
                        "python3", "-c",
                        "import os, signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM}); os.execv(sys.argv[1], sys.argv[1:])",
                        InspectCommandTests.binary.path,
                    ] + arguments + setup.api
            } else {
                process.executableURL = InspectCommandTests.binary
                process.arguments = arguments + setup.api
            }
            var environment = ProcessInfo.processInfo.environment
            environment["RECEIPTDASH_READ_ONLY"] = nil
            environment["XDG_CONFIG_HOME"] = setup.folder.path
            process.environment = environment
            process.standardOutput = out
            process.standardError = err
            process.standardInput = FileHandle.nullDevice
            let process = process
            first = await withCheckedContinuation { (continuation: CheckedContinuation<First, Never>) in
                let once = FirstOf(continuation)
                process.terminationHandler = { _ in once.resume(.exited) }
                do { try process.run() } catch { once.resume(.exited) }
                setup.simulator.service.whenWritesTaken(1) {
                    kill(process.processIdentifier, signal)
                    once.resume(.written)
                }
            }
        }

        /// Waits for the end; standard output and error.
        func finish() -> (stdout: String, stderr: String) {
            process.waitUntilExit()
            return (
                String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
                String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            )
        }
    }

    @Test func aWriteKilledAfterItsPUTLeavesAPendingRowAndItsRequestIDRepeatsItOnce() async throws {
        let words = Wording("write-recording", matching: Wording.runVariables)
        let setup = try await ActionCommandsTests.Setup()
        // The simulator applies the extension, then holds its answer: the process is killed
        // while it waits, after the PUT reached "Apple".
        setup.simulator.service.delayWriteAnswers(by: 120)
        let write = await InFlight(
            setup,
            [
                "extend", "--original-transaction-id", Self.subscription, "--days", "7", "--reason", "service-issue", "--request-id", "ticket-kill",
                "--yes", "--format", "json", "--db", setup.db,
            ], signal: SIGKILL)
        let (stdout, stderr) = write.finish()
        #expect(write.first == .written, "the process ended before its PUT reached the simulator: \(stderr)")
        let process = write.process
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(process.terminationStatus == SIGKILL)
        #expect(stdout == "")
        // The request id was said before sending, on standard error in JSON mode.
        words.said(stderr)
        #expect(setup.simulator.service.writes.count == 1)

        let rows = try await setup.actionRows()
        #expect(rows.count == 1)
        let row = try #require(rows.first)
        #expect(row["result"] as? String == "unknown")
        #expect(row["pending"] as? Bool == true)
        #expect(row["request_id"] as? String == "ticket-kill")
        #expect(row["http_status"] is NSNull)
        let repeatCommand =
            "receiptdash extend --original-transaction-id \(Self.subscription) --days 7 --reason service-issue --environment production --request-id ticket-kill"
        #expect(row["repeat_command"] as? String == repeatCommand)
        let plan = try #require(row["plan"] as? String)
        words.said(plan)
        words.said(plan)
        // The expiry the plan promised: "expires A → B (+7 days)".
        let promised = try #require(plan.split(separator: "\n").first { $0.contains("(+7 days)") }).split(separator: " ")
        let newExpiry = try #require(promised.firstIndex(of: "→").map { String(promised[$0 + 1]) })

        let text = try await setup.plain(["history", "--actions", "--db", setup.db])
        words.said(text.stdout)
        words.said(text.stdout)

        // The command it names, run as it is: Apple answers the same request id with the same
        // extension, applied once.
        setup.simulator.service.delayWriteAnswers(by: 0)
        let again = try await setup.run(Array(repeatCommand.split(separator: " ").dropFirst().map(String.init)) + ["--yes", "--format", "json", "--db", setup.db])
        #expect(again.status == 0, "\(again.stderr)")
        let result = try #require((again.json as? [String: Any])?["result"] as? [String: Any])
        #expect(result["effective_date"] as? String == newExpiry)
        #expect(setup.simulator.service.writes.count == 2)
        #expect(Set(setup.simulator.service.writes.map(\.body)) == [#"{"extendByDays":7,"extendReasonCode":3,"requestIdentifier":"ticket-kill"}"#])
        let after = try await setup.actionRows()
        #expect(after.map { $0["result"] as? String } == ["success", "unknown"])
        try await setup.stop()
        words.check()
    }

    /// Ctrl-C (or SIGTERM) while a write is in flight does not kill the process between the
    /// send and the record: it waits for Apple's answer, records it, then exits 128 + signal.
    @Test(arguments: [(SIGINT, false), (SIGTERM, false), (SIGINT, true), (SIGTERM, true)])
    func aSignalDuringAWriteWaitsForTheAnswerAndRecordsIt(_ signal: Int32, _ masked: Bool) async throws {
        let words = Wording("write-recording", case: "\(signal) \(masked)", matching: Wording.runVariables)
        let setup = try await ActionCommandsTests.Setup()
        setup.simulator.service.delayWriteAnswers(by: 1.5)
        let write = await InFlight(
            setup,
            [
                "extend", "--original-transaction-id", Self.subscription, "--days", "3", "--reason", "other", "--request-id", "ticket-int",
                "--yes", "--db", setup.db,
            ], maskSignals: masked, signal: signal)
        #expect(write.first == .written)
        let (stdout, stderr) = write.finish()
        let process = write.process
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 128 + signal, "\(stderr)")
        words.said(stderr)
        words.said(stdout)
        words.said(stdout)
        let rows = try await setup.actionRows()
        #expect(rows.map { $0["result"] as? String } == ["success"])
        #expect(rows.first?["pending"] as? Bool == false)
        #expect(rows.first?["http_status"] as? Int == 200)
        try await setup.stop()
        words.check()
    }

    @Test func aWriteOnDataJudgedInvalidNeedsForceUntrusted() async throws {
        let words = Wording("write-recording", matching: Wording.runVariables)
        // The simulator signs with its own root, which is not given: every signed item of the
        // customer is judged against Apple's roots alone and fails.
        let setup = try await ActionCommandsTests.Setup()
        let api = setup.api
        let withoutRoot = zip(api.indices, api).filter { index, word in word != "--root-ca" && (index == 0 || api[index - 1] != "--root-ca") }.map(\.1)
        let base = [
            "extend", "--original-transaction-id", Self.subscription, "--days", "7", "--reason", "service-issue", "--yes", "--db", setup.db,
        ]
        let refused = try await ActionCommandsTests.runRaw(base + withoutRoot, folder: setup.folder)
        #expect(refused.status == 1)
        words.said(refused.stderr)
        #expect(setup.simulator.service.writes.isEmpty)
        let forced = try await ActionCommandsTests.runRaw(base + ["--force-untrusted"] + withoutRoot, folder: setup.folder)
        #expect(forced.status == 0, "\(forced.stderr)")
        words.said(forced.stdout)
        #expect(setup.simulator.service.writes.count == 1)
        try await setup.stop()
        words.check()
    }

    @Test(arguments: [
        ["test-notification", "--yes"],
        ["extend", "--all-active", "--product-id", "com.example.receiptdash.pro.monthly", "--days", "3", "--reason", "other", "--yes"],
    ])
    func underAutoAWriteToNoCustomerAsksForTheEnvironment(_ arguments: [String]) async throws {
        let words = Wording("write-recording", case: "\(arguments)")
        let setup = try await ActionCommandsTests.Setup()
        let run = try await setup.run(arguments + ["--db", setup.db, "--format", "json"])
        #expect(run.status == 1)
        let error = try #require((run.json as? [String: Any])?["error"] as? [String: Any])
        #expect(error["code"] as? String == "environment-unknown")
        words.said((error["message"] as? String))
        #expect(setup.simulator.service.writes.isEmpty)
        try await setup.stop()
        words.check()
    }

    @Test func aDryRunPrintsThePlanAsARealRunShowsIt() async throws {
        let words = Wording("write-recording", matching: Wording.runVariables)
        let setup = try await ActionCommandsTests.Setup()
        let run = try await setup.run([
            "extend", "--original-transaction-id", Self.subscription, "--days", "7", "--reason", "service-issue", "--request-id", "ticket-1",
            "--dry-run",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        words.said(lines.first)
        words.said(lines)
        words.said(lines)
        #expect(
            run.stdout.hasSuffix(
                """
                dry run: nothing sent
                PUT /inApps/v1/subscriptions/extend/\(Self.subscription)
                {"extendByDays":7,"extendReasonCode":3,"requestIdentifier":"ticket-1"}

                """))
        #expect(setup.simulator.service.writes.isEmpty)
        try await setup.stop()
        words.check()
    }
}
