import Crypto
import Foundation
import AppStoreAPI
import ReceiptCore
import Synchronization

/// One receipt to verify.
public struct BatchItem: Sendable {
    public var id: Int
    /// Where it came from (a path, `paste 3`, `-`).
    public var source: String
    /// The base64 receipt data as sent to Apple.
    public var receiptData: String

    public init(id: Int, source: String, receiptData: String) {
        self.id = id
        self.source = source
        self.receiptData = receiptData
    }
}

/// Totals that always balance: `queued == done + failed`.
public struct BatchSummary: Sendable, Hashable {
    public var queued = 0
    public var done = 0
    public var failed = 0
    public var valid = 0
    public var byStatus: [Int: Int] = [:]
    public var duplicates = 0
}

/// Verifies many receipts with bounded concurrency, first in first out, each identical
/// receipt once. Items are pulled from the sequence only as slots free up, so memory stays flat
/// however many are queued behind.
public struct BatchVerifier: Sendable {
    public let client: VerifyReceiptClient
    public let concurrency: Int

    public init(client: VerifyReceiptClient, concurrency: Int = 8) {
        self.client = client
        self.concurrency = max(1, concurrency)
    }

    public func run<S: AsyncSequence & Sendable>(_ items: S, onEvent: @escaping @Sendable (BatchEvent) -> Void) async -> BatchSummary
    where S.Element == BatchItem {
        let ledger = Ledger()
        await withTaskGroup(of: Void.self) { group in
            var inFlight = 0
            var iterator = items.makeAsyncIterator()
            while true {
                if Task.isCancelled { break }
                if inFlight >= concurrency {
                    await group.next()
                    inFlight -= 1
                }
                guard let item = try? await iterator.next() else { break }
                onEvent(.queued(id: item.id, source: item.source))
                ledger.queued()
                inFlight += 1
                group.addTask {
                    let key = ReceiptKey(item.receiptData)
                    let outcome: VerificationOutcome
                    let duplicateOf: Int?
                    switch ledger.claim(key, id: item.id) {
                    case .first:
                        outcome = await client.verify(receiptData: item.receiptData) { event in
                            switch event {
                            case .sending(let attempt, let endpoint): onEvent(.sending(id: item.id, attempt: attempt, endpoint: endpoint))
                            case .retrying(let seconds, let reason): onEvent(.retrying(id: item.id, inSeconds: seconds, reason: reason))
                            }
                        }
                        ledger.settle(key, outcome)
                        duplicateOf = nil
                    case .duplicate(let firstID):
                        outcome = await ledger.wait(key)
                        duplicateOf = firstID
                    }
                    if let failure = outcome.failure {
                        ledger.failed()
                        onEvent(.failed(id: item.id, failure: failure, attempts: outcome.attempts))
                    } else {
                        ledger.done(outcome, duplicate: duplicateOf != nil)
                        onEvent(.done(id: item.id, outcome: outcome, duplicateOf: duplicateOf))
                    }
                }
            }
            await group.waitForAll()
        }
        return ledger.summary
    }
}

/// A receipt's identity for deduplication: its SHA-256, 32 bytes inline.
struct ReceiptKey: Hashable, Sendable {
    var a: UInt64, b: UInt64, c: UInt64, d: UInt64

    init(_ receiptData: String) {
        var words = [UInt64](repeating: 0, count: 4)
        for (i, byte) in SHA256.hash(data: Data(receiptData.utf8)).enumerated() {
            words[i / 8] = words[i / 8] << 8 | UInt64(byte)
        }
        (a, b, c, d) = (words[0], words[1], words[2], words[3])
    }
}

/// Counts and the deduplication table, behind a `Mutex`. For each distinct receipt only its
/// answer's status and environment are kept (about a hundred bytes), so the table stays small
/// however many receipts pass through.
final class Ledger: Sendable {
    enum Claim {
        case first
        case duplicate(firstID: Int)
    }

    /// What a duplicate reports: the first receipt's answer, without attempts of its own.
    struct Answer: Sendable {
        var status: Int?
        var environment: String?
        var failure: VerificationFailure?

        var outcome: VerificationOutcome {
            VerificationOutcome(status: status, environment: environment, attempts: [], response: nil, failure: failure)
        }
    }

    struct State {
        var summary = BatchSummary()
        var seen: [ReceiptKey: (id: Int, answer: Answer?)] = [:]
        var waiters: [ReceiptKey: [CheckedContinuation<VerificationOutcome, Never>]] = [:]
    }

    private let state = Mutex(State())

    var summary: BatchSummary { state.withLock { $0.summary } }

    func queued() { state.withLock { $0.summary.queued += 1 } }
    func failed() { state.withLock { $0.summary.failed += 1 } }

    func done(_ outcome: VerificationOutcome, duplicate: Bool) {
        state.withLock { s in
            s.summary.done += 1
            if duplicate { s.summary.duplicates += 1 }
            if let status = outcome.status { s.summary.byStatus[status, default: 0] += 1 }
            if outcome.status == 0 { s.summary.valid += 1 }
        }
    }

    func claim(_ key: ReceiptKey, id: Int) -> Claim {
        state.withLock { s in
            if let existing = s.seen[key] { return .duplicate(firstID: existing.id) }
            s.seen[key] = (id, nil)
            return .first
        }
    }

    func settle(_ key: ReceiptKey, _ outcome: VerificationOutcome) {
        let answer = Answer(status: outcome.status, environment: outcome.environment, failure: outcome.failure)
        let continuations = state.withLock { s in
            s.seen[key]?.answer = answer
            return s.waiters.removeValue(forKey: key) ?? []
        }
        for c in continuations { c.resume(returning: answer.outcome) }
    }

    func wait(_ key: ReceiptKey) async -> VerificationOutcome {
        await withCheckedContinuation { continuation in
            let ready: VerificationOutcome? = state.withLock { s in
                if let answer = s.seen[key]?.answer { return answer.outcome }
                s.waiters[key, default: []].append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// Any sequence of items as an async sequence, pulled one by one (a lazy sequence keeps
/// memory flat however many items it stands for).
public struct BatchItems<Base: Sequence & Sendable>: AsyncSequence, Sendable where Base.Element == BatchItem {
    public typealias Element = BatchItem
    let base: Base

    public init(_ base: Base) {
        self.base = base
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var iterator: Base.Iterator
        public mutating func next() async -> BatchItem? { iterator.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(iterator: base.makeIterator()) }
}
