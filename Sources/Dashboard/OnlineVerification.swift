import Foundation
import AppStoreAPI
import PlainWords
import ReceiptCore
import UntrustedText

/// One request to verify online: the dashboard item and its receipt data.
public struct OnlineRequest: Sendable, Hashable {
    public var itemID: Int
    /// Empty for a shelved item (``LoadedItem/isShelved``) until the loop reads it again.
    public var receiptData: String
    /// The receipt's row in the audit database, when the dashboard records one.
    public var auditID: Int64?

    public init(itemID: Int, receiptData: String, auditID: Int64? = nil) {
        self.itemID = itemID
        self.receiptData = receiptData
        self.auditID = auditID
    }
}

/// One exchange with verifyReceipt, as the panes show it: the core's typed attempt (its
/// `result` prints as "status 21007", "HTTP 503", "timed out …").
public typealias OnlineAttempt = VerificationAttempt

/// What verification reports while it works. The dashboard does no networking itself: the
/// executable plugs a verifier (the AppStoreClients batch engine) in through ``OnlineVerifying``.
/// Reasons and failures are typed (ReceiptCore's verification model); words are rendered here.
public enum OnlineEvent: Sendable {
    case queued(itemID: Int)
    case sending(itemID: Int, attempt: Int, url: String)
    case retrying(itemID: Int, inSeconds: Double, reason: RetryReason)
    case done(itemID: Int, status: Int, environment: String?, attempts: [OnlineAttempt], response: DecodedInput?)
    case failed(itemID: Int, reason: VerificationFailure, attempts: [OnlineAttempt])
}

public protocol OnlineVerifying: Sendable {
    /// Verifies the requests, reporting as it goes; returns when all have ended.
    func verify(_ requests: [OnlineRequest], onEvent: @escaping @Sendable (OnlineEvent) -> Void) async
}

/// Where an item stands online (reasons already rendered in words, for the panes).
public enum OnlineState: Sendable {
    case queued
    case sending(attempt: Int)
    case retrying(inSeconds: Double, reason: String)
    case done(status: Int, environment: String?, attempts: [OnlineAttempt])
    case failed(reason: String, attempts: [OnlineAttempt])

    var isFinal: Bool {
        switch self {
        case .done, .failed: true
        default: false
        }
    }
}

extension DashboardState {
    /// Applies a verification event that happened at `time` (wall clock, for the log).
    public mutating func apply(_ event: OnlineEvent, at time: Date) {
        metrics.record(event, at: time)
        if time > wallClock { wallClock = time }
        switch event {
        case .queued(let id):
            online[id] = .queued
        case .sending(let id, let attempt, let url):
            online[id] = .sending(attempt: attempt)
            addLog("\(name(id)): sending attempt \(attempt) to \(url)", role: .info, at: time)
        case .retrying(let id, let seconds, let reason):
            let words = SafeText.escaped(reason.description)
            online[id] = .retrying(inSeconds: seconds, reason: words)
            addLog(String(format: "%@: retrying in %.1f s (%@)", name(id), seconds, words), role: .warning, at: time)
        case .done(let id, let status, let environment, let attempts, _):
            online[id] = .done(status: status, environment: environment, attempts: attempts)
            let explained = AppleStatus.explain(status)
            let latency = attempts.map(\.latencyMilliseconds).reduce(0, +)
            addLog(
                "\(name(id)): status \(status) \(explained.title)\(environment.map { " (\($0))" } ?? "") in \(CountNoun.attempt.count(attempts.count)), \(Int(latency)) ms",
                role: status == 0 ? .ok : .warning, at: time)
        case .failed(let id, let failure, let attempts):
            let words = SafeText.escaped(failure.reason)
            online[id] = .failed(reason: words, attempts: attempts)
            addLog("\(name(id)): failed after \(CountNoun.attempt.count(attempts.count)): \(words)", role: .error, at: time)
        }
    }

    private func name(_ id: Int) -> String {
        index(ofItem: id).map { items[$0].source } ?? "#\(id)"
    }

    /// Counts for the Receipts pane: queued, verifying, done, failed.
    public var onlineCounts: (queued: Int, verifying: Int, done: Int, failed: Int) {
        var counts = (queued: 0, verifying: 0, done: 0, failed: 0)
        for state in online.values {
            switch state {
            case .queued: counts.queued += 1
            case .sending, .retrying: counts.verifying += 1
            case .done: counts.done += 1
            case .failed: counts.failed += 1
            }
        }
        return counts
    }

    /// The requests for `v` (the selected receipt) or `V` (all), skipping inputs verifyReceipt
    /// does not take and those already in flight.
    mutating func verificationRequests(all: Bool) -> [OnlineRequest] {
        let candidates = (all ? items : selectedItem.map { [$0] } ?? []).filter { item in
            guard item.verifiable else { return false }
            if let state = online[item.id], !state.isFinal { return false }
            return true
        }
        for item in candidates { online[item.id] = .queued }
        return requests(for: candidates)
    }

    /// Requests for the inputs verifyReceipt takes, each tied to its audit row when it has one.
    func requests(for candidates: [LoadedItem]) -> [OnlineRequest] {
        let rowOfItem = Dictionary(auditRows.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first })
        return candidates.compactMap { item in
            // A shelved item's data is read again by the loop as it hands the requests on.
            if item.isShelved { return item.verifiable ? OnlineRequest(itemID: item.id, receiptData: "", auditID: rowOfItem[item.id]) : nil }
            return item.receiptData.map { OnlineRequest(itemID: item.id, receiptData: $0, auditID: rowOfItem[item.id]) }
        }
    }
}
