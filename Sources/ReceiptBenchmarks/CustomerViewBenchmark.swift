import AppStoreAPI
import AuditTrail
import Dashboard
import Foundation
import ReceiptCore
import ReceiptTrust

extension BenchmarkRun {
    /// `bench --render-customer N`: the dashboard's Customer view of one customer with `events`
    /// notifications in the trail, a 200×60 frame per step while the selection walks the
    /// timeline; and how long telling the story took (once, when the answer arrives).
    public func benchCustomerView(events: Int) async {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        var state = DashboardState(now: now)
        state.wallClock = now
        var p = Purchase(source: .jwsTransaction)
        p.transactionID = "2000000000000001"
        p.originalTransactionID = "2000000000000001"
        p.productID = "com.example.monthly"
        p.productType = .autoRenewable
        p.purchaseDate = now.addingTimeInterval(-Double(events) * 3600)
        p.expiresDate = now.addingTimeInterval(86_400)
        var decoded = DecodedInput(format: .jwsTransaction)
        decoded.transactions = [p]
        let result = CustomerLookupResult(
            query: .transactionID("2000000000000001"), at: now, environment: .production,
            transactions: [LookedUpItem(decoded: decoded, trust: TrustReport(verdict: .valid, steps: []))])
        let notifications = (0..<events).map { i in
            let at = now.addingTimeInterval(-Double(events - i) * 3600)
            return StoredNotification(
                record: NotificationRecord(
                    notificationUUID: "n\(i)", version: .v2, notificationType: i % 7 == 0 ? "DID_CHANGE_RENEWAL_STATUS" : "DID_RENEW",
                    subtype: i % 7 == 0 ? "AUTO_RENEW_ENABLED" : nil, environment: "Production", signedDate: at, receivedAt: at, verdict: .valid,
                    transactionID: String(3_000_000_000_000_000 + i), originalTransactionID: "2000000000000001", productID: "com.example.monthly"),
                deliveries: 1, lastReceivedAt: at)
        }
        let stored = StoredCustomerRecordsBox(StoredCustomerRecords(originalTransactionIDs: ["2000000000000001"], notifications: notifications))
        _ = state.handle(.resize(width: 200, height: 60))
        let told = DispatchTime.now().uptimeNanoseconds
        state.add(result, stored: stored)
        let storyMilliseconds = Double(DispatchTime.now().uptimeNanoseconds - told) / 1e6
        _ = state.handle(.character("u"))
        _ = state.handle(.character("g"))
        _ = DashboardView.render(state, width: 200, height: 60)  // warm up
        var times: [Double] = []
        let begin = DispatchTime.now().uptimeNanoseconds
        var step = 0
        repeat {
            let t0 = DispatchTime.now().uptimeNanoseconds
            _ = state.handle(step % 50 == 49 ? .pageDown : .down)
            let frame = DashboardView.render(state, width: 200, height: 60)
            times.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
            precondition(frame.width == 200)
            step += 1
        } while Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e9 < seconds
        times.sort()
        print(String(
            format: "Customer view 200×60 with %d events: key + frame median %.3f ms, p95 %.3f ms, worst %.3f ms over %d frames; story told once in %.1f ms",
            events + 1, times[times.count / 2], times[times.count * 95 / 100], times[times.count - 1], times.count, storyMilliseconds))
    }
}
