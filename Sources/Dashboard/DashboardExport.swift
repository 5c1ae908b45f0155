import AppStoreAPI
import CustomerTimeline
import Foundation
import JSONWriting
import LocalFiles
import PlainWords
import ReceiptCore
import ReceiptRendering
import TerminalUI
import UntrustedText

/// `e`: what the current view is written as, where, and in which format.
public struct ExportForm: Sendable, Hashable {
    public enum View: String, Sendable, Hashable {
        /// The Receipts pane's list as filtered and sorted: one `inspect --summary` line each.
        case receipts
        /// The selected receipt's purchases as filtered and sorted.
        case purchases
        /// The notifications shown.
        case notifications
        /// The selected input, whole (`inspect --format json`, or `lookup --format json`).
        case input
        /// The Customer view's story, as `customer --format json` or `csv` gives it.
        case customer
    }

    public enum Format: String, Sendable, Hashable {
        case json, csv
    }

    public var view: View
    public var format: Format
    /// The folder typed (default: the audit database's folder, else the current one).
    public var folder: String
}

/// A file to write with mode 0600 (`e`): never over an existing one.
public struct ExportFile: Sendable, Hashable {
    public var folder: String
    public var fileName: String
    public var contents: String
    /// What it holds, for the message: `3 receipts`.
    public var what: String
}

extension DashboardState {
    /// `e`: the form for the focused view, or why there is nothing to export.
    mutating func startExport(_ asked: ExportForm.View? = nil) {
        let view: ExportForm.View
        switch (asked, focus) {
        case (let asked?, _): view = asked
        case (nil, .receipts): view = .receipts
        case (nil, .purchases): view = .purchases
        case (nil, .notifications): view = .notifications
        case (nil, .subscriptions), (nil, .status), (nil, .log): view = .input
        }
        let empty: Bool
        switch view {
        case .receipts: empty = receiptOrder.isEmpty
        case .purchases: empty = rowOrder.isEmpty
        case .notifications: empty = notifications.isEmpty
        case .input: empty = selectedItem == nil || selectedItem?.detailsLost != nil
        case .customer: empty = customerStory == nil
        }
        guard !empty else {
            message = view == .input ? selectedItem?.detailsLost.map { ("nothing to export: \($0)", .warning) } ?? ("nothing to export here", .info) : ("nothing to export here", .info)
            return
        }
        mode = .export(ExportForm(view: view, format: .json, folder: exportFolder ?? "."))
    }

    /// Keys in the `e` form: Tab switches JSON and CSV, typing edits the folder, Enter writes,
    /// Esc cancels.
    mutating func handleExport(_ event: KeyEvent, form: ExportForm) -> [Effect] {
        var form = form
        switch event {
        case .escape:
            mode = .normal
            message = ("export cancelled: nothing written", .info)
            return []
        case .enter:
            mode = .normal
            guard let file = exportFile(form) else {
                message = ("nothing to export here", .info)
                return []
            }
            return [.save(file)]
        case .tab, .backTab:
            if form.view != .input { form.format = form.format == .json ? .csv : .json }
        case .backspace: form.folder = String(form.folder.dropLast())
        case .control("u"): form.folder = ""
        case .character(let c): form.folder.append(c)
        case .paste(let text): form.folder += text.replacingOccurrences(of: "\n", with: "")
        case .control("c"): return [.quit]
        default: break
        }
        mode = .export(form)
        return []
    }

    /// The form's title line: what, how many, and the format.
    func exportTitle(_ form: ExportForm) -> String {
        switch form.view {
        case .receipts: "Export the \(CountNoun.receipt.count(receiptOrder.count)) listed as \(form.format.rawValue.uppercased())"
        case .purchases: "Export the \(CountNoun.purchase.count(rowOrder.count)) listed as \(form.format.rawValue.uppercased())"
        case .notifications:
            "Export the \(CountNoun.notification.count(notifications.count)) as \(form.format.rawValue.uppercased())"
        case .input: "Export the selected input as JSON"
        case .customer:
            "Export the customer's story (\(CountNoun.event.count(customerStory?.events.count ?? 0))) as \(form.format.rawValue.uppercased())"
        }
    }

    /// The file the form asks for, made from the state as it is now.
    func exportFile(_ form: ExportForm) -> ExportFile? {
        let stamp = Self.fileStamp(wallClock)
        let folder = form.folder.isEmpty ? "." : form.folder
        let ext = form.format.rawValue
        switch form.view {
        case .receipts:
            let summaries = receiptOrder.compactMap { items[$0].summary }
            return ExportFile(
                folder: folder, fileName: "receiptdash-receipts-\(stamp).\(ext)",
                contents: form.format == .json ? Self.json(summaries) : Self.csv(summaries),
                what: "\(CountNoun.receipt.count(summaries.count))")
        case .purchases:
            guard let item = selectedItem else { return nil }
            let rows = rowOrder.map { item.rows[$0] }
            var contents: String
            if form.format == .json {
                var out = JSONOutput()
                out.beginArray()
                for row in rows { purchaseJSON(row, into: &out) }
                out.endArray()
                contents = out.text + "\n"
            } else {
                contents = Self.purchaseColumns.joined(separator: ",") + "\n"
                for row in rows { contents += purchaseCells(row).map(SafeText.csvCell).joined(separator: ",") + "\n" }
            }
            return ExportFile(
                folder: folder, fileName: "receiptdash-purchases-\(stamp).\(ext)", contents: contents,
                what: "\(CountNoun.purchase.count(rows.count))")
        case .notifications:
            let rows = notifications.map(\.row)
            var contents: String
            if form.format == .json {
                var out = JSONOutput()
                NotificationListing.json(rows, into: &out)
                contents = out.text + "\n"
            } else {
                contents = NotificationListing.csvHeader + "\n" + rows.map { NotificationListing.csvLine($0) + "\n" }.joined()
            }
            return ExportFile(
                folder: folder, fileName: "receiptdash-notifications-\(stamp).\(ext)", contents: contents,
                what: "\(CountNoun.notification.count(rows.count))")
        case .input:
            guard let item = selectedItem else { return nil }
            return ExportFile(folder: folder, fileName: "receiptdash-export-\(item.id).json", contents: exportJSON(item), what: "the selected input")
        case .customer:
            guard let story = customerStory else { return nil }
            var contents: String
            if form.format == .json {
                var out = JSONOutput()
                CustomerJSON.render([story], into: &out)
                contents = out.text
            } else {
                contents = CustomerCSV.render([story])
            }
            return ExportFile(
                folder: folder, fileName: "receiptdash-customer-\(stamp).\(ext)", contents: contents,
                what: "the customer's story (\(CountNoun.event.count(story.events.count)))")
        }
    }

    static func json(_ summaries: [ReceiptSummary]) -> String {
        var out = JSONOutput()
        out.beginArray()
        for summary in summaries { summary.json(into: &out) }
        out.endArray()
        return out.text + "\n"
    }

    static func csv(_ summaries: [ReceiptSummary]) -> String {
        ReceiptSummary.csvHeader + "\n" + summaries.map { $0.csvLine + "\n" }.joined()
    }

    /// The Purchases table's columns, as exported (CSV header, JSON keys).
    static let purchaseColumns = [
        "product_id", "type", "transaction_id", "original_transaction_id", "purchase_date", "expires_date", "state", "web_order_line_item_id",
    ]

    /// A purchase's cells as the table shows them (dates in full).
    func purchaseCells(_ p: Purchase) -> [String] {
        [
            p.productID ?? "", Self.typeText(p), p.transactionID ?? "", p.originalTransactionID ?? "",
            p.purchaseDate.map(AppleDate.iso8601) ?? "", p.expiresDate.map(AppleDate.iso8601) ?? "", Self.rowState(p, now: now).0,
            p.webOrderLineItemID ?? "",
        ]
    }

    func purchaseJSON(_ p: Purchase, into out: inout JSONOutput) {
        out.beginObject()
        for (key, value) in zip(Self.purchaseColumns, purchaseCells(p)) {
            if value.isEmpty {
                out.key(text: key)
                out.null()
            } else {
                out.member(text: key, value)
            }
        }
        out.endObject()
    }

    /// `y`: the focused cell (Purchases: the column under the cursor).
    func copyCell() -> String? {
        switch focus {
        case .receipts: return selectedItem?.source
        case .purchases:
            guard let p = selectedPurchase else { return nil }
            let cell = purchaseCells(p)[columnCursor.exportIndex]
            return cell.isEmpty ? nil : cell
        case .subscriptions:
            let index = scroll[.subscriptions]?.selected ?? 0
            return selectedItem?.analysis?.subscriptions.dropFirst(index).first?.originalTransactionID
        case .status: return selectedItem?.trust?.headline ?? selectedItem?.error?.reason
        case .notifications: return selectedNotification?.row.notificationUUID
        case .log:
            let index = scroll[.log]?.selected ?? (log.count - 1)
            return log.indices.contains(index) ? log[index].text : nil
        }
    }

    /// `Y`: the focused row as one JSON object.
    func copyRow() -> String? {
        var out = JSONOutput()
        switch focus {
        case .receipts:
            guard let summary = selectedItem?.summary else { return nil }
            summary.json(into: &out)
        case .purchases:
            guard let p = selectedPurchase else { return nil }
            purchaseJSON(p, into: &out)
        case .notifications:
            guard let row = selectedNotification?.row else { return nil }
            NotificationListing.object(row, into: &out)
        case .subscriptions:
            let index = scroll[.subscriptions]?.selected ?? 0
            guard let s = selectedItem?.analysis?.subscriptions.dropFirst(index).first else { return nil }
            out.beginObject()
            out.nullableMember("expires_date", s.expiresDate)
            out.member("original_transaction_id", s.originalTransactionID)
            out.member("product_ids", strings: s.productIDs)
            out.member("state", s.state.rawValue)
            out.member("why", s.explanation)
            out.endObject()
        case .status, .log:
            return nil
        }
        return out.text
    }

    /// `20261128-120000`, UTC: file names sort by time.
    static func fileStamp(_ date: Date) -> String {
        let iso = AppleDate.iso8601(date)
        let digits = iso.prefix(19).filter { $0.isNumber }
        return String(digits.prefix(8)) + "-" + String(digits.dropFirst(8).prefix(6))
    }
}

extension PurchaseColumn {
    /// Its place among ``DashboardState/purchaseColumns``.
    var exportIndex: Int {
        switch self {
        case .product: 0
        case .type: 1
        case .transaction: 2
        case .original: 3
        case .purchased: 4
        case .expires: 5
        case .state: 6
        }
    }
}

/// Writes an ``ExportFile`` as the shell does: a new file with mode 0600 (`name-2.csv` when the
/// name is taken), never over an existing one; the path written, or why not.
public enum ExportWriter {
    public static func write(_ file: ExportFile) -> Result<String, FileCreationError> {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file.folder, isDirectory: &isFolder), isFolder.boolValue else {
            return .failure(FileCreationError(path: file.folder, what: "file", errno: ENOENT))
        }
        let base = (file.fileName as NSString).deletingPathExtension
        let ext = (file.fileName as NSString).pathExtension
        for attempt in 1...100 {
            let name = attempt == 1 ? file.fileName : "\(base)-\(attempt).\(ext)"
            let path = (file.folder as NSString).appendingPathComponent(name)
            do {
                guard try FilePermissions.createPrivateFile(atPath: path) else { continue }
                guard let handle = FileHandle(forWritingAtPath: path) else { return .failure(FileCreationError(path: path, what: "file", errno: EACCES)) }
                defer { try? handle.close() }
                try handle.write(contentsOf: Data(file.contents.utf8))
                return .success(path)
            } catch let error as FileCreationError {
                return .failure(error)
            } catch {
                return .failure(FileCreationError(path: path, what: "file", errno: EIO))
            }
        }
        return .failure(FileCreationError(path: file.folder, what: "file", errno: EEXIST))
    }
}
