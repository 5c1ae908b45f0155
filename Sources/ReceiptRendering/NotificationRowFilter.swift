import AppStoreAPI
import Foundation

/// The Notifications pane's filter (`f` there): the receipt filter's language, read by the same
/// parser (``ReceiptFilter/init(_:keys:)``) with the keys a notification has. Terms are separated
/// by spaces, and every one must hold:
///
/// - `type:T`: the notification type, or `TYPE/SUBTYPE` (`type:DID_RENEW`,
///   `type:DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED`, `type:refund*`), any case, `*` and
///   `?` as in a shell.
/// - `product:ID`: the product id (`product:*.monthly`), `*` and `?` as in a shell.
/// - Any other word: found, in any case, in the row (type, subtype, explanation, product,
///   transaction ids, bundle id, environment, UUID).
public struct NotificationRowFilter: Sendable, Hashable {
    public static let keys = ["type", "product"]

    public var terms: [ReceiptFilter.Term]

    /// The filter that lets every notification through.
    public static let everything = NotificationRowFilter(terms: [])

    public init(terms: [ReceiptFilter.Term]) {
        self.terms = terms
    }

    /// Reads `text`; a key a notification does not have is an error that names those it has.
    public init(_ text: String) throws(FilterError) {
        terms = try ReceiptFilter([text], keys: Self.keys).terms
    }

    /// Whether every term holds for `row`.
    public func matches(_ row: NotificationRow) -> Bool {
        lazy var words = Self.searchText(row)
        return terms.allSatisfy { term in
            switch term {
            case .type(let pattern):
                let wanted = pattern.uppercased()
                let type = (row.notificationType ?? "").uppercased()
                return Glob.matches(wanted, type) || Glob.matches(wanted, type + "/" + (row.subtype ?? "").uppercased())
            case .product(let pattern): return row.productID.map { Glob.matches(pattern, $0) } ?? false
            case .text(let word): return ReceiptFilter.contains(words, word)
            case .state, .verdict, .environment, .bundle, .file: return false
            }
        }
    }

    /// The row's words, lowercased, for plain words.
    static func searchText(_ row: NotificationRow) -> String {
        [
            row.notificationType, row.subtype, row.explanation, row.productID, row.transactionID, row.originalTransactionID, row.bundleID,
            row.environment, row.notificationUUID,
        ].compactMap { $0 }.joined(separator: " ").lowercased()
    }
}
