import AppStoreClients
import AuditTrail
import Foundation
import LocalFiles
import Logging
import PlainWords
import ReceiptCore
import ServiceLifecycle
import Synchronization
import UntrustedText

/// `receiptdash watch`: folders, log files and standard input polled, what they hold recorded
/// in the audit trail, and (with a verifier) each new receipt verified with Apple as it
/// arrives, receipts left pending by an interrupted run first. A service: it ends by itself
/// with ``Settings/once`` (or when standard input ends and it is the only source), else at the
/// group's graceful shutdown or cancellation; either way verification in flight is finished
/// and recorded before ``run()`` returns. A write the audit trail refuses stops the loop with
/// an ``AuditError`` that names it.
public struct WatchLoop: Service {
    public struct Settings: Sendable {
        /// Folders, log files, or `-` for standard input.
        public var sources: [String]
        /// Read what is there now (standard input to its end), verify it, and stop.
        public var once: Bool
        /// Follow log files from their end.
        public var fromEnd: Bool
        /// Between polls of folders and files.
        public var interval: Duration
        /// Delete receipts not seen for this many days, first.
        public var keepDays: Int?

        public init(sources: [String], once: Bool = false, fromEnd: Bool = false, interval: Duration = .milliseconds(500), keepDays: Int? = nil) {
            self.sources = sources
            self.once = once
            self.fromEnd = fromEnd
            self.interval = interval
            self.keepDays = keepDays
        }
    }

    public let store: any AuditBackend
    public let settings: Settings
    /// Verifies new receipts; nil records only.
    public let verifier: BatchVerifier?
    /// What waits between polls.
    public let clock: any Clock<Duration>
    /// Lines for a person (already escaped where they hold untrusted text).
    public let log: @Sendable (String) -> Void
    /// Standard input's lines, when a source is `-`.
    public let standardInput: (any LineSource)?

    public init(
        store: any AuditBackend, settings: Settings, verifier: BatchVerifier?, clock: any Clock<Duration> = ContinuousClock(),
        standardInput: (any LineSource)? = nil, log: @escaping @Sendable (String) -> Void
    ) {
        self.store = store
        self.settings = settings
        self.verifier = verifier
        self.clock = clock
        self.standardInput = standardInput
        self.log = log
    }

    public func run() async throws {
        let store = self.store
        let log = self.log
        if let keepDays = settings.keepDays {
            let removed = try await store.prune(keepDays: keepDays, now: Date())
            log("pruned \(CountNoun.receipt.count(removed)) not seen for \(keepDays) days")
        }
        let ingestor = Ingestor(store: store)
        let watched = WatchedSources(settings.sources, logsFromStart: !settings.fromEnd)
        let (folders, logs) = (watched.folders, watched.logs)
        let stdinLines = watched.readsStandardInput ? standardInput : nil
        let once = settings.once

        // Verification runs beside the polling, fed through a stream. A result it cannot
        // write stops the loop below.
        let (stream, continuation) = AsyncStream<BatchItem>.makeStream()
        let auditFailure = FirstAuditFailure()
        let verify = verifier != nil
        var unreadable = 0

        func enqueue(_ recorded: [AuditRecorded]) async throws {
            guard verify else { return }
            let fresh = recorded.filter { $0.isNew && $0.receiptData != nil }
            try await audited("marking \(fresh.count) receipts pending", in: store) { try await store.markPending(fresh.map(\.id)) }
            for r in fresh { continuation.yield(BatchItem(id: Int(r.id), source: "#\(r.id)", receiptData: r.receiptData!)) }
        }

        func poll() async throws {
            var firstPass = true
            while true {
                let now = Date()
                // --once reads folders and logs once; standard input is read to its end.
                let pollFiles = !once || firstPass
                firstPass = false
                for folder in folders where pollFiles {
                    // --once takes the folder as it is; a long watch waits for each file to settle.
                    let paths = folder.poll(settled: !once)
                    var files: [(path: String, bytes: [UInt8])] = []
                    for path in paths {
                        // Read no more than the decoder takes: a huge file dropped in is skipped, not a stall.
                        switch InputFiles.readFile(path, limit: DecodingLimits.default.maximumInputBytes) {
                        case .success(let bytes): files.append((path, bytes))
                        case .failure(let error):
                            unreadable += 1
                            log("\(path): skipped: \(error.reason)")
                        }
                    }
                    if !files.isEmpty {
                        let recorded = try await audited("recording files from \(folder.path)", in: store) {
                            try await ingestor.ingest(files: files, kind: .watch, at: now)
                        }
                        try await enqueue(recorded)
                        log("\(folder.path): \(CountNoun.file.count(files.count)), \(recorded.filter(\.isNew).count) new")
                    }
                }
                for follower in logs where pollFiles {
                    let lines = follower.poll()
                    if !lines.isEmpty {
                        let recorded = try await audited("recording lines of \(follower.path)", in: store) {
                            try await ingestor.ingest(lines: lines, kind: .watch, source: follower.path, at: now)
                        }
                        try await enqueue(recorded)
                        log("\(follower.path): \(CountNoun.line.count(lines.count)), \(recorded.filter(\.isNew).count) new, \(lines.count - recorded.count) skipped")
                    }
                }
                var stdinDone = false
                if let stdinLines {
                    let (lines, ended) = stdinLines.drain()
                    stdinDone = ended
                    if !lines.isEmpty {
                        let recorded = try await audited("recording lines of standard input", in: store) {
                            try await ingestor.ingest(lines: lines, kind: .stdin, source: "-", at: now)
                        }
                        try await enqueue(recorded)
                    }
                }
                let onlyStdin = folders.isEmpty && logs.isEmpty
                if auditFailure.error != nil { return }
                if stdinLines == nil || stdinDone {
                    if once || (onlyStdin && stdinDone) { return }
                }
                // The group's shutdown (SIGINT, SIGTERM) or a cancellation ends the wait and the loop.
                do {
                    try await cancelWhenGracefulShutdown { try await clock.sleep(for: settings.interval) }
                } catch {
                    return
                }
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
            }
        }

        var pollFailure: (any Error)?
        if let verifier {
            let audited = AuditedVerification(store: store, verifier: verifier)
            // Verification is a child of this run: it ends when the stream does, after the loop.
            async let summary = audited.run(
                stream,
                onEvent: { event in
                    switch event {
                    case .done(let id, let outcome, _):
                        log("verified #\(id): status \(outcome.status.map(String.init) ?? "?") (\(CountNoun.attempt.count(outcome.attempts.count)))")
                    case .failed(let id, let failure, _): log("failed #\(id): \(failure.reason)")
                    case .retrying(let id, let seconds, let reason): log(String(format: "retrying #%d in %.1f s: ", id, seconds) + reason.description)
                    default: break
                    }
                },
                onAuditError: { error in
                    log(error.reason)
                    auditFailure.keep(error)
                })
            do {
                for (id, data) in try await store.pending() {
                    continuation.yield(BatchItem(id: Int(id), source: "pending #\(id)", receiptData: data))
                }
                try await poll()
            } catch {
                pollFailure = error
            }
            continuation.finish()
            let batch = await summary.batch
            if pollFailure == nil { log("verification: \(batch.done) answered, \(batch.failed) failed") }
        } else {
            do { try await poll() } catch { pollFailure = error }
            continuation.finish()
        }
        if let pollFailure { throw pollFailure }
        let c = ingestor.counts
        log("ingested \(c.lines) lines and \(c.files) files: \(c.newReceipts) new receipts, \(c.seenAgain) seen again, \(c.skipped + unreadable) skipped")
        if let failure = auditFailure.error { throw failure }
    }
}

extension WatchLoop {
    /// Runs the loop, then closes its store, in one group that SIGINT or SIGTERM ends: the
    /// verification in flight is recorded, and the store closes after the loop whatever ended it.
    public func runUntilSignalled() async throws {
        let group = ServiceGroup(
            configuration: .init(
                services: [
                    .init(service: AuditStoreService(store)),
                    .init(service: self, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: Logger(label: "receiptdash.watch", factory: { _ in SwiftLogNoOpLogHandler() })))
        try await group.run()
    }
}

/// Runs a write to the audit database; its failure becomes an ``AuditError`` that names what
/// was being written (the command then exits non-zero with it).
public func audited<T>(_ what: String, in store: any AuditBackend, _ body: () async throws -> T) async throws(AuditError) -> T {
    do {
        return try await body()
    } catch {
        throw AuditError(.writeFailed, doing: SafeText.escaped(what), error, in: store)
    }
}

/// Lines a watch drains on each poll (standard input).
public protocol LineSource: Sendable {
    /// The lines read since the last drain, and whether the input has ended (and all is drained).
    func drain() -> (lines: [String], ended: Bool)
}

/// Lines from standard input, read on a thread of their own (a blocking read) and drained by
/// the poll loop.
public final class StandardInputLines: LineSource, Sendable {
    private let state = Mutex<(lines: [String], ended: Bool)>(([], false))

    public init() {
        Thread.detachNewThread { [self] in
            while let line = readLine(strippingNewline: true) {
                state.withLock { $0.lines.append(line) }
            }
            state.withLock { $0.ended = true }
        }
    }

    public func drain() -> (lines: [String], ended: Bool) {
        state.withLock { s in
            let out = s.lines
            s.lines.removeAll()
            return (out, s.ended && out.isEmpty)
        }
    }
}

/// The first audit write that failed while verifying beside the poll loop: it stops the loop.
private final class FirstAuditFailure: Sendable {
    private let first = Mutex<AuditError?>(nil)

    var error: AuditError? { first.withLock { $0 } }

    func keep(_ error: AuditError) {
        first.withLock { if $0 == nil { $0 = error } }
    }
}
