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

    /// - Parameter notifications: give the Notifications pane a full-width band above the log
    ///   (its rows are wide: time, type explained, product, transaction, verdict, deliveries).
    public init?(width: Int, height: Int, notifications: Bool = false) {
        guard width >= Self.minimumWidth, height >= Self.minimumHeight else { return nil }
        title = Rect(x: 0, y: 0, width: width, height: 1)
        message = Rect(x: 0, y: height - 2, width: width, height: 1)
        footer = Rect(x: 0, y: height - 1, width: width, height: 1)
        var body = Rect(x: 0, y: 1, width: width, height: height - 3)
        var band: Rect?
        if notifications {
            let (upper, lower) = body.splitTop(body.height - max(6, body.height * 3 / 10))
            body = upper
            band = lower
        }
        let (left, right) = body.splitLeft(min(44, max(26, width * 3 / 10)))
        let logHeight = notifications ? 5 : height >= 34 ? 7 : 5
        let (upper, log) = right.splitTop(right.height - logHeight)
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
