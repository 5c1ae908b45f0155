import Foundation
import AppStoreAPI
import ReceiptCore
import ReceiptTrust

/// Answers "what did this customer buy, is it active, was it refunded, and why" through the
/// App Store Server API.
///
/// 1. The query becomes one transaction id and the environment it lives in: Look Up Order ID,
///    or Get Transaction Info (`auto`: production, then sandbox on 4040010).
/// 2. In that environment, at the same time: every page of the transaction history, all
///    subscription statuses, and every page of the refund history.
/// 3. Every signed item is decoded and judged by our own JWS trust (chain at `signedDate`,
///    nested tokens on their own), plus its `bundleId` and `environment` against the request.
/// 4. The transactions and renewal infos go through the same subscription analysis as
///    `inspect --at`.
///
/// ```swift
/// let service = CustomerLookupService(client: client, pipeline: ReceiptPipeline(at: Date()))
/// let result = await service.lookUp(.orderID("MQ5X7ABCDE"))
/// ```
public struct CustomerLookupService: Sendable {
    public let client: AppStoreServerAPIClient
    /// Decoder, trust evaluator (with any `--root-ca` anchors) and the instant judged at.
    public let pipeline: ReceiptPipeline

    public init(client: AppStoreServerAPIClient, pipeline: ReceiptPipeline) {
        self.client = client
        self.pipeline = pipeline
    }

    public func lookUp(
        _ query: LookupQuery, environment selection: APIEnvironmentSelection = .auto, filters: LookupFilters = LookupFilters(),
        onEvent: (@Sendable (APIClientEvent) -> Void)? = nil
    ) async -> CustomerLookupResult {
        var result = CustomerLookupResult(query: query, at: pipeline.instant)
        result.filters = filters
        var judged: [String: LookedUpItem] = [:]

        // 1. One transaction id, and its environment when an order names it. A transaction id
        //    goes straight to step 2: its history answers "which environment" as well as
        //    Get Transaction Info would, one round trip sooner.
        let anchorID: String
        let customerEnvironment: APIEnvironmentSelection
        switch query {
        case .orderID(let orderID):
            let answer = await client.lookUpOrder(orderID, environment: selection, onEvent: onEvent)
            result.records += answer.records
            result.environment = answer.environment
            guard let order = answer.value, let found = answer.environment else {
                result.failure = answer.failure
                return result
            }
            guard order.isValid, !order.signedTransactions.isEmpty else {
                result.failure = APIFailure(
                    .apiError,
                    order.isValid
                        ? "order \(orderID) has no transactions"
                        : "Apple does not know order ID \(orderID) (status 1, invalid): check it against the invoice email (10 characters, e.g. MQ5X7ABCDE)")
                return result
            }
            let items = await judge(order.signedTransactions, in: found, cache: &judged, notes: &result.notes)
            guard let id = items.lazy.compactMap({ $0.transaction?.transactionID }).first else {
                result.failure = APIFailure(.invalidResponse, "the order's signed transactions could not be read")
                result.transactions = items
                return result
            }
            anchorID = id
            customerEnvironment = APIEnvironmentSelection(found)
        case .transactionID(let id), .appTransactionID(let id), .receipt(_, let id, _):
            anchorID = id
            customerEnvironment = selection
        }

        // 2. History, statuses and refunds side by side (each through `auto` when asked: in
        //    production, the common case, that costs nothing extra). Each history page is
        //    judged as it arrives, while the next is asked: only the last page's items are left
        //    to judge when the history ends.
        let (arrivedPages, pageSink) = AsyncStream.makeStream(of: ([String], APIEnvironment).self)
        async let judgedEarly = judgeAsTheyArrive(arrivedPages)
        async let historyAnswer = client.transactionHistory(
            anchorID, filter: filters.history, environment: customerEnvironment, onEvent: onEvent, onPage: { pageSink.yield(($0, $1)) })
        async let statusAnswer = client.subscriptionStatuses(
            anchorID, status: filters.statuses, environment: customerEnvironment, onEvent: onEvent)
        async let refundAnswer = client.refundHistory(anchorID, environment: customerEnvironment, onEvent: onEvent)
        async let appAnswer = client.appTransactionInfo(anchorID, environment: customerEnvironment, onEvent: onEvent)
        let history = await historyAnswer
        pageSink.finish()
        let (statuses, refunds, app) = await (statusAnswer, refundAnswer, appAnswer)
        // Items judged early in another environment than the answer's are judged again below.
        for (token, early) in await judgedEarly where early.environment == history.environment ?? result.environment {
            judged[token] = early.item
        }
        result.records += history.records + statuses.records + refunds.records + app.records
        result.failure = history.failure ?? statuses.failure ?? refunds.failure
        guard let environment = history.environment ?? result.environment else { return result }
        result.environment = environment
        // The AppTransaction adds to the answer; without one (4040019) the look-up stands.
        if let signed = app.value?.signedAppTransactionInfo {
            result.appTransaction = await judge([signed], in: environment, cache: &judged, notes: &result.notes).first
        } else if let failure = app.failure, failure.apiError != .appTransactionDoesNotExist {
            result.notes.append("the app transaction could not be fetched: \(failure.reason)")
        }

        // 3. Judge every signed item (each once).
        var signedTransactions = history.value?.signedTransactions ?? []
        var signedRenewals: [String] = []
        for group in statuses.value?.data ?? [] {
            for last in group.lastTransactions {
                if let info = last.signedTransactionInfo { signedTransactions.append(info) }
                if let renewal = last.signedRenewalInfo { signedRenewals.append(renewal) }
                if let original = last.originalTransactionId, let status = last.subscriptionStatus {
                    result.apiStatuses[original] = status
                }
            }
        }
        _ = await judge(signedTransactions, in: environment, cache: &judged, notes: &result.notes)
        result.renewals = await judge(signedRenewals, in: environment, cache: &judged, notes: &result.notes)
        let refunded = await judge(refunds.value?.signedTransactions ?? [], in: environment, cache: &judged, notes: &result.notes)
        result.refunds = orderedUnique(refunded.compactMap { $0.transaction?.transactionID })

        // With history filters, the rows are the history's: the statuses' latest transactions
        // and the refund history are not filtered by Apple, and would add what was filtered out.
        let historyTokens = history.value?.signedTransactions ?? []
        let onlyIDs: Set<String>? =
            filters.history.queryItems.isEmpty ? nil : Set(historyTokens.compactMap { judged[$0]?.transaction?.transactionID })
        if let onlyIDs { result.refunds = result.refunds.filter(onlyIDs.contains) }
        // One row per transaction id (a refunded row, which carries the revocation, wins).
        var byID: [String: LookedUpItem] = [:]
        for item in judged.values {
            guard let id = item.transaction?.transactionID, onlyIDs?.contains(id) ?? true else { continue }
            if let kept = byID[id], kept.transaction?.cancellationDate != nil { continue }
            byID[id] = item
        }
        // Sorted by keys read once: reading them in the comparison copied each item's purchase
        // (dozens of fields retained and released) twice per comparison, 13 ms for 500 items.
        let keyed = byID.values.map { item in
            let transaction = item.transaction
            return (date: transaction?.purchaseDate ?? .distantPast, id: transaction?.transactionID ?? "", item: item)
        }
        result.transactions = keyed.sorted { $0.date == $1.date ? $0.id < $1.id : $0.date < $1.date }.map(\.item)

        // 4. The same analysis as `inspect --at`.
        let inputs = result.transactions.map(\.decoded) + result.renewals.map(\.decoded)
        if !inputs.isEmpty { result.analysis = PurchaseAnalysis.analyze(inputs, at: pipeline.instant) }
        return result
    }

    /// The history's items judged page by page as the pages arrive (the successes only: an
    /// item that fails is judged again with the rest, which notes why).
    private func judgeAsTheyArrive(_ pages: AsyncStream<([String], APIEnvironment)>) async -> [String: (environment: APIEnvironment, item: LookedUpItem)] {
        await withTaskGroup(of: (APIEnvironment, [(String, Result<LookedUpItem, ReceiptDecodingError>)]).self) { group in
            for await (tokens, environment) in pages {
                for chunk in Self.chunks(tokens) {
                    group.addTask { (environment, await judgeChunk(chunk, in: environment)) }
                }
            }
            var judged: [String: (environment: APIEnvironment, item: LookedUpItem)] = [:]
            for await (environment, out) in group {
                for case (let token, .success(let item)) in out { judged[token] = (environment, item) }
            }
            return judged
        }
    }

    /// Tokens in tasks of 10: a page of 20 is judged on two cores (the last page's time is the
    /// look-up's own, after the last round trip).
    private static func chunks(_ tokens: [String]) -> [[String]] {
        stride(from: 0, to: tokens.count, by: 10).map { Array(tokens[$0..<min($0 + 10, tokens.count)]) }
    }

    /// Decodes and judges `tokens` one after another (one task's share).
    private func judgeChunk(_ tokens: [String], in environment: APIEnvironment) async -> [(String, Result<LookedUpItem, ReceiptDecodingError>)] {
        let bundleID = client.credentials.bundleID
        var out: [(String, Result<LookedUpItem, ReceiptDecodingError>)] = []
        for token in tokens {
            do throws(ReceiptDecodingError) {
                let decoded = try Self.decode(token, with: pipeline.decoder)
                var item = LookedUpItem(decoded: decoded, trust: await pipeline.evaluator.evaluate(decoded, options: pipeline.trustOptions))
                item.check(bundleID: bundleID, environment: environment)
                out.append((token, .success(item)))
            } catch {
                out.append((token, .failure(error)))
            }
        }
        return out
    }

    /// Decodes and judges each signed item not judged before (keyed by the token itself), on
    /// every core, in chunks; the answer keeps the order of `tokens`.
    private func judge(
        _ tokens: [String], in environment: APIEnvironment, cache: inout [String: LookedUpItem], notes: inout [String]
    ) async -> [LookedUpItem] {
        var fresh: [String] = []
        var seen = Set<String>()
        for token in tokens where cache[token] == nil && seen.insert(token).inserted { fresh.append(token) }
        let chunks = Self.chunks(fresh)
        let done = await withTaskGroup(of: (Int, [(String, Result<LookedUpItem, ReceiptDecodingError>)]).self) { group in
            for (index, chunk) in chunks.enumerated() {
                group.addTask { (index, await judgeChunk(chunk, in: environment)) }
            }
            var all = [[(String, Result<LookedUpItem, ReceiptDecodingError>)]](repeating: [], count: chunks.count)
            for await (index, out) in group { all[index] = out }
            return all.flatMap { $0 }
        }
        for (token, outcome) in done {
            switch outcome {
            case .success(let item): cache[token] = item
            case .failure(let error):
                notes.append("a signed item from the \(environment.rawValue) API could not be read: \(error.reason)")
            }
        }
        return tokens.compactMap { cache[$0] }
    }

    private static func decode(_ token: String, with decoder: ReceiptDecoder) throws(ReceiptDecodingError) -> DecodedInput {
        do {
            return try decoder.decode(text: token)
        } catch let error as ReceiptDecodingError {
            throw error
        } catch {
            throw ReceiptDecodingError(.invalidJWS, "\(error)")
        }
    }

    private func orderedUnique(_ ids: [String]) -> [String] {
        var seen = Set<String>()
        return ids.filter { seen.insert($0).inserted }
    }
}

extension APIEnvironmentSelection {
    /// The selection that names exactly `environment`.
    public init(_ environment: APIEnvironment) {
        self = environment == .production ? .production : .sandbox
    }
}
