import Foundation
import AppStoreAPI
import JSONWriting
import ReceiptCore
import UntrustedText

/// What `receiptdash history` looks for.
public struct HistoryQuery: Sendable, Hashable {
    public var transactionID: String?
    public var originalTransactionID: String?
    public var bundleID: String?
    public var productID: String?
    public var status: Int?
    public var since: Date?
    public var limit: Int

    public init(
        transactionID: String? = nil, originalTransactionID: String? = nil, bundleID: String? = nil, productID: String? = nil,
        status: Int? = nil, since: Date? = nil, limit: Int = 10_000
    ) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.bundleID = bundleID
        self.productID = productID
        self.status = status
        self.since = since
        self.limit = limit
    }
}

/// One distinct receipt with its sightings and purchases.
public struct HistoryRow: Sendable, Hashable {
    /// One time the receipt was ingested: how (paste, file, watch, stdin), from where, when.
    public struct Sighting: Sendable, Hashable {
        public var kind: String
        public var source: String?
        public var seenAt: Date

        package init(kind: String, source: String?, seenAt: Date) {
            self.kind = kind
            self.source = source
            self.seenAt = seenAt
        }
    }

    public var id: Int64
    public var format: String
    public var bundleID: String?
    public var environment: String?
    public var firstSeen: Date
    public var lastSeen: Date
    public var sightings: Int
    public var state: ReceiptState
    public var status: Int?
    /// The purchases, with the fields the store keeps (``PurchaseField/audited``).
    public var purchases: [Purchase]
    /// Every sighting, oldest first (`sightings` is their count).
    public var seen: [Sighting]

    package init(id: Int64, format: String, bundleID: String? = nil, environment: String? = nil, firstSeen: Date, lastSeen: Date, sightings: Int, state: ReceiptState, status: Int? = nil, purchases: [Purchase], seen: [Sighting]) {
        self.id = id
        self.format = format
        self.bundleID = bundleID
        self.environment = environment
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
        self.sightings = sightings
        self.state = state
        self.status = status
        self.purchases = purchases
        self.seen = seen
    }
}

/// `history` output in text, JSON and CSV.
public enum HistoryRendering {
    /// A line per receipt, then one per purchase. Everything after the id is receipt-derived:
    /// escaped, so it cannot drive the terminal.
    public static func text(_ rows: [HistoryRow]) -> String {
        if rows.isEmpty { return "no receipts match\n" }
        let safe = SafeText.escaped
        var text = ""
        for r in rows {
            text +=
                "#\(r.id) \(safe(r.format)) \(safe(r.bundleID ?? "-")) \(safe(r.environment ?? "-")) \(safe(r.state.rawValue))\(r.status.map { " status \($0)" } ?? "") · seen \(r.sightings)× \(AppleDate.iso8601(r.firstSeen)) … \(AppleDate.iso8601(r.lastSeen))\n"
            for p in r.purchases {
                text +=
                    "    \(safe(p.productID ?? "?"))  \(safe(p.transactionID ?? ""))  \(safe(p.originalTransactionID ?? ""))  \(p.purchaseDate.map(AppleDate.iso8601) ?? "")\(p.expiresDate.map { " → " + AppleDate.iso8601($0) } ?? "")\n"
            }
        }
        return text
    }

    public static func json(_ rows: [HistoryRow]) -> JSONValue {
        func date(_ d: Date?) -> JSONValue { d.map { .string(AppleDate.iso8601($0)) } ?? .null }
        return .array(
            rows.map { r in
                .object([
                    "id": .integer(r.id), "format": .string(r.format), "bundle_id": r.bundleID.map(JSONValue.string) ?? .null,
                    "environment": r.environment.map(JSONValue.string) ?? .null, "first_seen": date(r.firstSeen),
                    "last_seen": date(r.lastSeen), "sightings": .integer(Int64(r.sightings)), "state": .string(r.state.rawValue),
                    "status": r.status.map { .integer(Int64($0)) } ?? .null,
                    "seen": .array(
                        r.seen.map { s in
                            .object(["kind": .string(s.kind), "source": s.source.map(JSONValue.string) ?? .null, "at": date(s.seenAt)])
                        }),
                    "in_app": .array(
                        r.purchases.map { p in
                            .object(
                                Dictionary(
                                    uniqueKeysWithValues: PurchaseField.audited.map { field in
                                        (field.name, json(field.value(in: p)))
                                    }))
                        }),
                ])
            })
    }

    /// A purchase field's value as JSON (`null` when absent).
    static func json(_ value: PurchaseField.Value?) -> JSONValue {
        switch value {
        case .text(let text)?: .string(text)
        case .integer(let number)?: .integer(number)
        case .flag(let flag)?: .bool(flag)
        case .date(let date)?: .string(AppleDate.iso8601(date))
        case .object(let value)?: value
        case nil: .null
        }
    }

    /// One line per purchase (receipts without purchases get one line), RFC 4180 quoting.
    public static func csv(_ rows: [HistoryRow]) -> String {
        let columns = PurchaseField.historyCSV
        var lines = [
            "receipt_id,format,bundle_id,environment,first_seen,last_seen,sightings,state,status,"
                + columns.map(\.name).joined(separator: ",")
        ]
        func field(_ s: String?) -> String { s.map(SafeText.csvCell) ?? "" }
        func date(_ d: Date?) -> String { d.map(AppleDate.iso8601) ?? "" }
        for r in rows {
            let head = [
                String(r.id), field(r.format), field(r.bundleID), field(r.environment), date(r.firstSeen), date(r.lastSeen),
                String(r.sightings), field(r.state.rawValue), r.status.map(String.init) ?? "",
            ]
            if r.purchases.isEmpty {
                lines.append((head + columns.map { _ in "" }).joined(separator: ","))
            }
            for p in r.purchases {
                lines.append(
                    (head + columns.map { field($0.value(in: p)?.text) }).joined(separator: ","))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// `history --actions`: the writes sent to Apple, newest first. JSON keys (a contract):
/// `action`, `at`, `user`, `environment`, `request_id`, `original_transaction_id`,
/// `transaction_id`, `product_id`, `request_body`, `http_status`, `api_error`, `result`.
public enum ActionHistory {
    /// What a row's outcome is, as shown: a `pending` row (recorded before sending, never
    /// completed: the process died, or it is still under way) is `unknown`, since Apple may
    /// have applied it.
    public static func shownResult(_ row: AuditAction) -> String { row.result == AuditAction.pending ? "unknown" : row.result }

    /// The command that repeats an unknown write safely: the same action, environment, body
    /// and request id (Apple applies an extension's request id once; the other writes set a
    /// value, so repeating them sets it again). Nil for an outcome that is known.
    public static func repeatCommand(_ row: AuditAction) -> String? {
        guard shownResult(row) == "unknown" else { return nil }
        let body = row.requestBody.flatMap { try? JSONValue.parse(Array($0.utf8)) }?.object ?? [:]
        func int(_ key: String) -> Int64? { body[key]?.int64 }
        func reason() -> String? { int("extendReasonCode").flatMap { ExtendReason(rawValue: Int($0)) }?.name }
        var words = ["receiptdash", row.action == "mass-extend" ? "extend" : row.action]
        switch row.action {
        case "extend":
            guard let original = row.originalTransactionID, let days = int("extendByDays"), let reason = reason() else { return nil }
            words += ["--original-transaction-id", original, "--days", String(days), "--reason", reason]
        case "mass-extend":
            guard let product = body["productId"]?.text ?? row.productID, let days = int("extendByDays"), let reason = reason() else { return nil }
            words += ["--all-active", "--product-id", product, "--days", String(days), "--reason", reason]
            for code in body["storefrontCountryCodes"]?.array?.compactMap(\.text) ?? [] { words += ["--storefront", code] }
        case "consumption":
            guard let transaction = row.transactionID, let delivery = body["deliveryStatus"]?.text.flatMap(DeliveryStatus.init(rawValue:)),
                let sample = body["sampleContentProvided"]?.bool
            else { return nil }
            words += ["--transaction-id", transaction, "--delivery-status", delivery.name, "--customer-consented", "--sample-content-provided", String(sample)]
            if let milliunits = int("consumptionPercentage") {
                words += ["--consumed-percent", milliunits % 1000 == 0 ? String(milliunits / 1000) : String(Double(milliunits) / 1000)]
            }
            if let preference = body["refundPreference"]?.text.flatMap(RefundPreference.init(rawValue:)) { words += ["--refund-preference", preference.name] }
        case "app-account-token":
            guard let original = row.originalTransactionID, let token = body["appAccountToken"]?.text else { return nil }
            words += ["--original-transaction-id", original, "--token", token]
        case "finish":
            guard let transaction = row.transactionID else { return nil }
            words += ["--transaction-id", transaction]
        case "test-notification":
            break
        default:
            return nil
        }
        if let environment = row.environment { words += ["--environment", environment.lowercased()] }
        if let id = row.requestID { words += ["--request-id", id] }
        return words.map(shellWord).joined(separator: " ")
    }

    /// A word as a POSIX shell reads it back: as it is when it holds only safe characters,
    /// else in single quotes; escaped for the terminal either way.
    static func shellWord(_ word: String) -> String {
        let safe = word.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x2E || b == 0x5F || b == 0x2F
                || b == 0x3A || b == 0x40 || b == 0x2B || b == 0x3D
        }
        if safe && !word.isEmpty { return word }
        return "'" + SafeText.escaped(word).replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    public static func json(_ rows: [AuditAction]) -> JSONValue {
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        return .array(
            rows.map { r in
                .object([
                    "action": .string(r.action), "at": .string(AppleDate.iso8601(r.at)), "user": .string(r.user),
                    "environment": text(r.environment), "request_id": text(r.requestID), "original_transaction_id": text(r.originalTransactionID),
                    "transaction_id": text(r.transactionID), "product_id": text(r.productID),
                    "request_body": r.requestBody.flatMap { try? JSONValue.parse(Array($0.utf8)) } ?? text(r.requestBody),
                    "http_status": r.httpStatus.map { .integer(Int64($0)) } ?? .null, "api_error": r.apiError.map { .integer(Int64($0)) } ?? .null,
                    "result": .string(shownResult(r)), "pending": .bool(r.result == AuditAction.pending),
                    "completed_at": r.completedAt.map { .string(AppleDate.iso8601($0)) } ?? .null, "response_body": text(r.responseBody),
                    "repeat_command": text(repeatCommand(r)), "plan": text(r.plan), "app_transaction_id": text(r.appTransactionID),
                ])
            })
    }

    public static func csv(_ rows: [AuditAction]) -> String {
        var lines = [
            "at,user,action,environment,request_id,original_transaction_id,transaction_id,product_id,http_status,api_error,result,request_body,pending,repeat_command"
        ]
        func cell(_ s: String?) -> String { s.map(SafeText.csvCell) ?? "" }
        for r in rows {
            lines.append(
                [
                    AppleDate.iso8601(r.at), cell(r.user), cell(r.action), cell(r.environment), cell(r.requestID), cell(r.originalTransactionID),
                    cell(r.transactionID), cell(r.productID), r.httpStatus.map(String.init) ?? "", r.apiError.map(String.init) ?? "",
                    cell(shownResult(r)), cell(r.requestBody), r.result == AuditAction.pending ? "true" : "false", cell(repeatCommand(r)),
                ].joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    public static func text(_ rows: [AuditAction]) -> String {
        if rows.isEmpty { return "no actions recorded\n" }
        let safe = SafeText.escaped
        return rows.map { r in
            let ids = [r.originalTransactionID.map { "original \($0)" }, r.transactionID.map { "transaction \($0)" }, r.productID]
                .compactMap { $0 }.map(safe).joined(separator: " ")
            let answer = r.apiError.map { " error \($0)" } ?? r.httpStatus.map { " HTTP \($0)" } ?? ""
            let pending = r.result == AuditAction.pending ? " (no outcome recorded: the process ended before Apple's answer)" : ""
            var line = "\(AppleDate.iso8601(r.at)) \(safe(r.user)) \(safe(r.action)) \(safe(r.environment ?? "-")) \(ids) → \(safe(shownResult(r)))\(answer)\(pending)"
                + (r.requestID.map { " (request \(safe($0)))" } ?? "") + "\n"
            if let command = repeatCommand(r) {
                line += "    Apple may have applied it: check the customer, then repeat it safely with: \(command)\n"
            }
            return line
        }.joined()
    }
}

extension HistoryRendering {
    /// `history`'s rows in `format` on the console's standard output.
    public static func write(_ rows: [HistoryRow], format: TableFormat, to console: Console) {
        switch format {
        case .json: console.line(JSONOutput.text(of: json(rows)))
        case .csv: console.output(csv(rows))
        case .text: console.output(text(rows))
        }
    }
}

extension ActionHistory {
    /// `history --actions`' rows in `format` on the console's standard output.
    public static func write(_ rows: [AuditAction], format: TableFormat, to console: Console) {
        switch format {
        case .json: console.line(JSONOutput.text(of: json(rows)))
        case .csv: console.output(csv(rows))
        case .text: console.output(text(rows))
        }
    }
}
