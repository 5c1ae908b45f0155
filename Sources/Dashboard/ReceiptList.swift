import Foundation
import ReceiptCore
import ReceiptRendering
import TerminalUI

/// The Receipts pane's columns: what `s` sorts by, in the order it steps through them.
public enum ReceiptColumn: Int, Sendable, CaseIterable {
    case loaded, file, verdict, environment, bundle, active, expired, refunds, expiry

    public var title: String {
        switch self {
        case .loaded: "load order"
        case .file: "file"
        case .verdict: "verdict"
        case .environment: "environment"
        case .bundle: "bundle"
        case .active: "active subscriptions"
        case .expired: "expired subscriptions"
        case .refunds: "refunds"
        case .expiry: "latest expiry"
        }
    }

    /// Counts and dates read most usefully from the top: most, or latest, first.
    var descendingFirst: Bool {
        switch self {
        case .active, .expired, .refunds, .expiry: true
        default: false
        }
    }
}

extension DashboardState {
    /// Whether `a` comes before `b` in the receipt sort (ties: load order).
    func receiptPrecedes(_ a: Int, _ b: Int) -> Bool {
        guard let x = items[a].summary, let y = items[b].summary else { return a < b }
        let order: ComparisonResult
        switch receiptSort {
        case .loaded: order = .orderedSame
        case .file: order = Self.compare(x.file, y.file)
        case .verdict: order = Self.compare(x.verdict, y.verdict)
        case .environment: order = Self.compare(x.environment ?? "", y.environment ?? "")
        case .bundle: order = Self.compare(x.bundleID ?? "", y.bundleID ?? "")
        case .active: order = Self.compare(x.activeSubscriptions, y.activeSubscriptions)
        case .expired: order = Self.compare(x.expiredSubscriptions, y.expiredSubscriptions)
        case .refunds: order = Self.compare(x.refunds, y.refunds)
        case .expiry: order = Self.compare(x.latestExpiry ?? .distantPast, y.latestExpiry ?? .distantPast)
        }
        switch order {
        case .orderedAscending: return !receiptDescending
        case .orderedDescending: return receiptDescending
        case .orderedSame: return a < b
        }
    }

    private static func compare<T: Comparable>(_ a: T, _ b: T) -> ComparisonResult {
        a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
    }

    /// Whether the receipt filter lets `items[index]` through.
    func receiptPasses(_ index: Int) -> Bool {
        receiptFilter.terms.isEmpty || items[index].summary.map { receiptFilter.matches($0, searchText: items[index].searchText) } ?? false
    }

    /// Puts a newly added item where the filter and sort say: appended in load order, else
    /// inserted at its sorted place (a binary search: loading stays linear in what is loaded).
    mutating func placeInReceiptOrder(_ index: Int) {
        guard receiptPasses(index) else { return }
        if receiptSort == .loaded || receiptOrder.last.map({ receiptPrecedes($0, index) }) ?? true {
            receiptOrder.append(index)
            return
        }
        var low = 0
        var high = receiptOrder.count
        while low < high {
            let mid = (low + high) / 2
            if receiptPrecedes(receiptOrder[mid], index) { low = mid + 1 } else { high = mid }
        }
        receiptOrder.insert(index, at: low)
        // The selection stays on the same receipt.
        if var s = scroll[.receipts], s.selected >= low, receiptOrder.count > 1 {
            s.selected += 1
            scroll[.receipts] = s
        }
    }

    /// Filters and sorts the receipts again, keeping `items[keeping]` (else the selected
    /// receipt) selected when it is still listed.
    mutating func rebuildReceiptOrder(keeping: Int? = nil) {
        let kept = keeping ?? selectedItemIndex
        var order = items.indices.filter { receiptPasses($0) }
        if receiptSort != .loaded { order.sort { receiptPrecedes($0, $1) } }
        receiptOrder = order
        let position = kept.flatMap { order.firstIndex(of: $0) } ?? 0
        let previous = scroll[.receipts] ?? ScrollState()
        scroll[.receipts] = ScrollState(selected: position, offset: previous.offset)
        rebuildRows()
    }

    /// Reads and applies a receipt filter; nil when it applied, else why it could not be read
    /// (the filter in force stays).
    mutating func applyReceiptFilter(_ text: String) -> String? {
        let filter: ReceiptFilter
        do {
            filter = try ReceiptFilter([text])
        } catch {
            return error.reason
        }
        receiptFilterText = text.trimmingCharacters(in: .whitespaces)
        receiptFilter = filter
        rebuildReceiptOrder()
        return nil
    }

    mutating func clearReceiptFilter() {
        receiptFilterText = ""
        receiptFilter = .everything
        rebuildReceiptOrder()
    }

    /// `s` in Receipts: the next column, each read its natural way first (counts and the
    /// latest expiry most first; names A to Z); back to load order after the last.
    mutating func sortReceiptsByNextColumn() {
        let all = ReceiptColumn.allCases
        receiptSort = all[(receiptSort.rawValue + 1) % all.count]
        receiptDescending = receiptSort.descendingFirst
        rebuildReceiptOrder()
    }

    /// The Receipts pane's title: how many are listed of how many, the filter and the sort.
    var receiptsTitle: String {
        var title = "Receipts [\(receiptOrder.count == items.count ? "\(items.count)" : "\(receiptOrder.count) of \(items.count)")]"
        if receiptSort != .loaded { title += " by \(receiptSort.title)" }
        return title
    }
}

extension DashboardState {
    /// The verdict line for an input that could not be decoded. One that began as a receipt,
    /// a JWS or a signed transaction and then does not parse (a byte changed, a length that
    /// runs past the end) cannot carry Apple's signature as it is: not genuine. One that is no
    /// receipt at all is said to be that.
    public static func verdictLine(_ error: ReceiptDecodingError) -> String {
        switch error.code {
        case .invalidASN1, .invalidPKCS7, .invalidReceiptPayload, .invalidLegacyReceipt, .invalidJWS:
            "✗ not genuine: it does not parse as Apple signs it (\(error.code.rawValue))"
        case .limitExceeded, .inputTooLarge:
            "? not judged: past a decoding limit (\(error.code.rawValue))"
        case .emptyInput, .unrecognisedFormat, .invalidBase64, .invalidPlist, .invalidJSON:
            "? not judged: not read as a receipt (\(error.code.rawValue))"
        }
    }
}
