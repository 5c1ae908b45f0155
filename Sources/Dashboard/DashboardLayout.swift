import TerminalUI

/// Where each pane goes at a given terminal size.
public struct DashboardLayout: Sendable, Hashable {
    public static let minimumWidth = 80
    public static let minimumHeight = 20

    public var title: Rect
    public var panes: [Pane: Rect]
    public var message: Rect
    public var footer: Rect
    /// The live metrics, beside the log on wide screens.
    public var metrics: Rect?

    /// - Parameter notifications: give the Notifications pane a full-width band between the
    ///   receipt panes and the Log/Metrics row, which then spans the width too: the live signal
    ///   on-call watches sits above the log, and its rows are wide (time, type explained,
    ///   product, transaction, verdict, deliveries).
    /// - Parameter receiptPanes: false folds the four receipt panes away (on call, with nothing
    ///   loaded they would be empty): the Notifications band takes their place.
    public init?(width: Int, height: Int, notifications: Bool = false, receiptPanes: Bool = true) {
        guard width >= Self.minimumWidth, height >= Self.minimumHeight else { return nil }
        title = Rect(x: 0, y: 0, width: width, height: 1)
        message = Rect(x: 0, y: height - 2, width: width, height: 1)
        footer = Rect(x: 0, y: height - 1, width: width, height: 1)
        var body = Rect(x: 0, y: 1, width: width, height: height - 3)
        if notifications, !receiptPanes {
            let (band, log) = body.splitTop(body.height - (height >= 34 ? 7 : 5))
            let (logPane, metricsPane) = log.splitLeft(log.width >= 90 ? log.width - 46 : log.width)
            panes = [.notifications: band, .log: logPane]
            metrics = metricsPane.width > 0 ? metricsPane : nil
            return
        }
        var band: Rect?
        var logRow: Rect?
        if notifications {
            let bandHeight = max(6, body.height * 3 / 10)
            let (rest, log) = body.splitTop(body.height - 5)
            let (upper, lower) = rest.splitTop(rest.height - bandHeight)
            body = upper
            band = lower
            logRow = log
        }
        // The Receipts pane: 26 to 44 columns, and from 160 columns up 80 to 100 (45 % of the
        // width) for whole file names and a bundle column.
        let receiptsWidth = width >= 160 ? min(100, max(80, width * 9 / 20)) : min(44, max(26, width * 3 / 10))
        let (left, right) = body.splitLeft(receiptsWidth)
        var upper = right
        var log: Rect
        if let logRow {
            log = logRow
        } else {
            (upper, log) = right.splitTop(right.height - (height >= 34 ? 7 : 5))
        }
        let (purchases, lower) = upper.splitTop(max(notifications ? 5 : 6, upper.height * 11 / 20))
        let (subscriptions, status) = lower.splitLeft(lower.width * 11 / 20)
        let (logPane, metricsPane) = log.splitLeft(log.width >= 90 ? log.width - 46 : log.width)
        panes = [.receipts: left, .purchases: purchases, .subscriptions: subscriptions, .status: status, .log: logPane]
        if let band { panes[.notifications] = band }
        metrics = metricsPane.width > 0 ? metricsPane : nil
    }

    /// Rows of the purchase table that fit (header and border excluded).
    public var purchaseRows: Int { max(1, (panes[.purchases]?.height ?? 3) - 3) }
}
