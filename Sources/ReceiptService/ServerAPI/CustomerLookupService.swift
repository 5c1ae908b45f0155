import Foundation
import ReceiptCore

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
        _ query: LookupQuery, environment selection: APIEnvironmentSelection = .auto,
        onEvent: (@Sendable (APIClientEvent) -> Void)? = nil
    ) async -> CustomerLookupResult {
        var result = CustomerLookupResult(query: query, at: pipeline.instant)
        var judged: [String: LookedUpItem] = [:]

        // 1. One transaction id, and its environment.
        let anchorID: String
        let environment: APIEnvironment
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
            environment = found
        case .transactionID(let id), .receipt(_, let id, _):
            let answer = await client.transactionInfo(id, environment: selection, onEvent: onEvent)
            result.records += answer.records
            result.environment = answer.environment
            guard let info = answer.value, let found = answer.environment else {
                result.failure = answer.failure
                return result
            }
            _ = await judge([info.signedTransactionInfo], in: found, cache: &judged, notes: &result.notes)
            anchorID = id
            environment = found
        }

        // 2. History, statuses and refunds side by side, in the environment found.
        let fixed = APIEnvironmentSelection(environment)
        async let historyAnswer = client.transactionHistory(anchorID, environment: fixed, onEvent: onEvent)
        async let statusAnswer = client.subscriptionStatuses(anchorID, environment: fixed, onEvent: onEvent)
        async let refundAnswer = client.refundHistory(anchorID, environment: fixed, onEvent: onEvent)
        let (history, statuses, refunds) = await (historyAnswer, statusAnswer, refundAnswer)
        result.records += history.records + statuses.records + refunds.records
        result.failure = history.failure ?? statuses.failure ?? refunds.failure

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

        // One row per transaction id (a refunded row, which carries the revocation, wins).
        var byID: [String: LookedUpItem] = [:]
        for item in judged.values {
            guard let id = item.transaction?.transactionID else { continue }
            if let kept = byID[id], kept.transaction?.cancellationDate != nil { continue }
            byID[id] = item
        }
        result.transactions = byID.values.sorted {
            let a = ($0.transaction?.purchaseDate ?? .distantPast, $0.transaction?.transactionID ?? "")
            let b = ($1.transaction?.purchaseDate ?? .distantPast, $1.transaction?.transactionID ?? "")
            return a.0 == b.0 ? a.1 < b.1 : a.0 < b.0
        }

        // 4. The same analysis as `inspect --at`.
        let inputs = result.transactions.map(\.decoded) + result.renewals.map(\.decoded)
        if !inputs.isEmpty { result.analysis = PurchaseAnalysis.analyze(inputs, at: pipeline.instant) }
        return result
    }

    /// Decodes and judges each signed item not judged before (keyed by the token itself).
    private func judge(
        _ tokens: [String], in environment: APIEnvironment, cache: inout [String: LookedUpItem], notes: inout [String]
    ) async -> [LookedUpItem] {
        var items: [LookedUpItem] = []
        for token in tokens {
            if let known = cache[token] {
                items.append(known)
                continue
            }
            let decoded: DecodedInput
            do {
                decoded = try pipeline.decoder.decode(text: token)
            } catch {
                notes.append("a signed item from the \(environment.rawValue) API could not be read: \((error as? ReceiptDecodingError)?.reason ?? "\(error)")")
                continue
            }
            let trust = await pipeline.evaluator.evaluate(decoded, options: pipeline.trustOptions)
            var item = LookedUpItem(decoded: decoded, trust: trust)
            item.check(bundleID: client.credentials.bundleID, environment: environment)
            cache[token] = item
            items.append(item)
        }
        return items
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
