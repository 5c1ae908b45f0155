import LocalFiles
import ReceiptCore
import ReceiptTrust
import Foundation

/// What a support engineer starts a look-up from.
public enum LookupQuery: Sendable, Hashable {
    /// The order ID on the customer's emailed App Store invoice (production only).
    case orderID(String)
    case transactionID(String)
    /// The customer's `appTransactionId` (one per Apple Account and app): Apple's endpoints
    /// take it where they take any transaction id of the customer.
    case appTransactionID(String)
    /// A receipt the engineer pasted or named: its transaction id, read by our own decoder
    /// after our own trust check (the migration path off `verifyReceipt`).
    case receipt(source: String, transactionID: String, verdict: TrustReport.Verdict?)

    /// The transaction id asked about, when the query names one.
    public var transactionID: String? {
        switch self {
        case .orderID, .appTransactionID: nil
        case .transactionID(let id), .receipt(_, let id, _): id
        }
    }

    /// Whether `text` has the shape of a transaction id or an app transaction id: ASCII digits
    /// only (at least one).
    public static func isIDShaped(_ text: String) -> Bool {
        !text.isEmpty && text.unicodeScalars.allSatisfy { ("0"..."9").contains($0) }
    }

    /// Whether `text` is made of what an order ID is made of: ASCII letters and digits only (at
    /// least one), as on the App Store invoice (`MQ5X7ABCDE`).
    public static func isOrderIDShaped(_ text: String) -> Bool {
        !text.isEmpty && text.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }
    }

    /// The query for a receipt (a file, or `-` for standard input): its newest transaction id,
    /// after our own decode and trust check. A failure is a sentence naming the receipt.
    public static func newestTransaction(in path: String, with pipeline: ReceiptPipeline) async -> Result<LookupQuery, LookupInputError> {
        let loaded = InputFiles.load([path], limit: pipeline.inputLimit)[0]
        let judged = await pipeline.judge(loaded)
        guard let decoded = judged.decoded else {
            return .failure(LookupInputError(.unreadable, reason: "\(path): \(judged.error?.reason ?? "could not be read")"))
        }
        let purchases = (decoded.receipt?.inApp ?? []) + decoded.transactions + decoded.latestReceiptInfo
        let newest = purchases.filter { $0.transactionID != nil }
            .max { ($0.purchaseDate ?? .distantPast) < ($1.purchaseDate ?? .distantPast) }
        guard let id = newest?.transactionID else {
            return .failure(LookupInputError(.noTransaction, reason: "\(path) holds no transaction id to look up (a receipt without in-app purchases)."))
        }
        return .success(.receipt(source: path, transactionID: id, verdict: judged.trust?.verdict))
    }
}

/// A receipt that cannot be looked up: unreadable, or without a transaction id.
/// A file given to look up that names no transaction, compared by code.
public struct LookupInputError: CodedError {
    public enum Code: String, CodedErrorCode, CaseIterable {
        /// The file could not be read or decoded.
        case unreadable = "unreadable-input"
        /// It decodes but holds no transaction id.
        case noTransaction = "no-transaction-id"
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// One signed item the API returned (a transaction or renewal info), decoded and judged:
/// our JWS trust (chain at `signedDate`, each nested token on its own), plus its `bundleId`
/// and `environment` against what was asked.
public struct LookedUpItem: Sendable {
    public var decoded: DecodedInput
    public var trust: TrustReport

    public init(decoded: DecodedInput, trust: TrustReport) {
        self.decoded = decoded
        self.trust = trust
    }

    /// The transaction, for a signed transaction.
    public var transaction: Purchase? { decoded.transactions.first }
    /// The AppTransaction, for a signed app transaction.
    public var appTransaction: AppReceipt? { decoded.format == .jwsAppTransaction ? decoded.receipt : nil }
    /// The renewal info, for signed renewal info.
    public var renewal: RenewalInfo? { decoded.pendingRenewalInfo.first }

    /// Adds the `bundle` and `environment` steps: Apple's verifier checks both after the
    /// signature, and a token for another app or environment must not pass as this one.
    public mutating func check(bundleID: String, environment: APIEnvironment) {
        // Renewal info carries no bundleId; its environment is checked.
        if let payloadBundle = transaction?.bundleID ?? appTransaction?.bundleID {
            trust.steps.append(
                payloadBundle == bundleID
                    ? .init(.bundle, outcome: .pass, reason: "bundleId is \(payloadBundle), the app asked about")
                    : .init(.bundle, failing: "bundle-mismatch", reason: "bundleId is \(payloadBundle), but the look-up was for \(bundleID)"))
        }
        let payloadEnvironment = transaction?.environment ?? renewal?.environment ?? appTransaction?.receiptType
        if let payloadEnvironment {
            trust.steps.append(
                payloadEnvironment == environment.rawValue
                    ? .init(.environment, outcome: .pass, reason: "environment is \(payloadEnvironment), where it was asked")
                    : .init(
                        .environment, failing: "environment-mismatch",
                        reason: "environment is \(payloadEnvironment), but it came from the \(environment.rawValue) API"))
        }
        if trust.steps.contains(where: { $0.outcome == .fail }) { trust.verdict = .invalid }
    }
}

/// What a look-up asks Apple to narrow: Get Transaction History's filters (sent again with
/// every page, as Apple requires) and the statuses Get All Subscription Statuses returns. Empty:
/// the whole customer.
public struct LookupFilters: Sendable, Hashable {
    public var history: TransactionHistoryFilter
    public var statuses: [SubscriptionAPIStatus]

    public init(history: TransactionHistoryFilter = TransactionHistoryFilter(), statuses: [SubscriptionAPIStatus] = []) {
        self.history = history
        self.statuses = statuses
    }

    /// Whether anything is narrowed.
    public var isEmpty: Bool { history.queryItems.isEmpty && statuses.isEmpty }

    /// A status as `--status` and the JSON name it: `active`, `expired`, `billing-retry`,
    /// `grace`, `revoked`, or the number for one Apple does not define.
    public static func name(_ status: SubscriptionAPIStatus) -> String {
        statusNames.first { $0.value == status }?.key ?? String(status.rawValue)
    }

    /// `--status` words and the statuses they stand for.
    public static let statusNames: [String: SubscriptionAPIStatus] = [
        "active": .active, "expired": .expired, "billing-retry": .billingRetry, "grace": .gracePeriod, "revoked": .revoked,
    ]

    /// The filters as Apple's query names them (`productId=…`, `status=1`), in a fixed order.
    public var queryItems: [APIRequest.QueryItem] {
        history.queryItems + statuses.map { .init("status", String($0.rawValue)) }
    }
}

/// The answer to one look-up: every transaction of the customer, their renewal preferences,
/// refunds, the same subscription analysis `inspect --at` makes, and every request made. A
/// failed look-up keeps what it learned and says why in ``failure``.
public struct CustomerLookupResult: Sendable {
    public var query: LookupQuery
    public var at: Date
    /// Where the customer was found (`auto` may have gone on to sandbox).
    public var environment: APIEnvironment?
    /// One per transaction id, oldest purchase first.
    public var transactions: [LookedUpItem]
    public var renewals: [LookedUpItem]
    /// The customer's AppTransaction (Get App Transaction Info), judged like every signed item;
    /// nil when Apple has none (4040019) or it could not be fetched.
    public var appTransaction: LookedUpItem?
    /// Transaction ids Apple refunded (Get Refund History).
    public var refunds: [String]
    /// Subscription statuses as Apple reports them (Get All Subscription Statuses), by original
    /// transaction id.
    public var apiStatuses: [String: SubscriptionAPIStatus]
    public var analysis: PurchaseAnalysis?
    public var records: [APIRequestRecord]
    public var failure: APIFailure?
    /// Signed items that could not be read, in words.
    public var notes: [String] = []
    /// What the look-up narrowed (its answer is not the whole customer when any is set).
    public var filters = LookupFilters()

    public init(
        query: LookupQuery, at: Date, environment: APIEnvironment? = nil, transactions: [LookedUpItem] = [],
        renewals: [LookedUpItem] = [], refunds: [String] = [], apiStatuses: [String: SubscriptionAPIStatus] = [:],
        analysis: PurchaseAnalysis? = nil, records: [APIRequestRecord] = [], failure: APIFailure? = nil
    ) {
        self.query = query
        self.at = at
        self.environment = environment
        self.transactions = transactions
        self.renewals = renewals
        self.refunds = refunds
        self.apiStatuses = apiStatuses
        self.analysis = analysis
        self.records = records
        self.failure = failure
    }

    /// The worst verdict among the signed items (`nil` when there are none).
    public var verdict: TrustReport.Verdict? {
        let verdicts = (transactions + renewals).map(\.trust.verdict)
        for worst in [TrustReport.Verdict.invalid, .unverifiable, .test, .valid] where verdicts.contains(worst) { return worst }
        return nil
    }
}

extension LookupQuery {
    /// How the audit trail names a look-up's source: "lookup order MQ…", "lookup transaction 2000…".
    public var auditSource: String {
        switch self {
        case .orderID(let id): "lookup order \(id)"
        case .transactionID(let id): "lookup transaction \(id)"
        case .appTransactionID(let id): "lookup app transaction \(id)"
        case .receipt(let source, let id, _): "lookup transaction \(id) from \(source)"
        }
    }
}
