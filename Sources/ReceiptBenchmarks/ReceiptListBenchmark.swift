import Dashboard
import Foundation
import LocalFiles
import ReceiptCore
import ReceiptDemo
import ReceiptTrust
import TerminalUI

extension BenchmarkRun {
    /// `bench --receipt-filter N`: the Receipts pane's filter and sort over N inputs (the demo's
    /// six judged once, added again under numbered names): each keystroke of `f state:expired
    /// env:sandbox` filters all N as typed, then `s` sorts them. Goal: ≤ 100 ms over 50,000.
    public func benchReceiptFilter(count: Int) async {
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        let judged = await ReceiptPipeline(at: now).judge(InputFiles.demo())
        var state = DashboardState(now: now)
        state.keepsSourceBytes = false
        for i in 0..<count {
            var input = judged[i % judged.count]
            input.source = String(format: "qa/%05d-", i) + (input.source as NSString).lastPathComponent
            state.add(input)
        }
        _ = state.handle(.resize(width: 120, height: 40))
        func milliseconds(_ body: () -> Void) -> Double {
            let start = DispatchTime.now().uptimeNanoseconds
            body()
            return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        }
        var keystrokes: [Double] = []
        var sorts: [Double] = []
        for _ in 0..<5 {
            _ = state.handle(.character("f"))
            for character in "state:expired env:sandbox" {
                keystrokes.append(milliseconds { _ = state.handle(.character(character)) })
            }
            keystrokes.append(milliseconds { _ = state.handle(.enter) })
            sorts.append(milliseconds { _ = state.handle(.character("s")) })
            _ = state.handle(.escape)
            while state.receiptSort != .loaded { _ = state.handle(.character("s")) }
        }
        let listed = state.receiptOrder.count
        keystrokes.sort()
        sorts.sort()
        print("receipt list: \(count) inputs (\(listed) listed after the last Esc)")
        print(
            String(
                format: "filter as typed, per keystroke over all %d: median %.1f ms, max %.1f ms; sort by file: median %.1f ms",
                count, keystrokes[keystrokes.count / 2], keystrokes.last ?? 0, sorts[sorts.count / 2]))
    }
}
