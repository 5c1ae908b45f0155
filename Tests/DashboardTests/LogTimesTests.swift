import Foundation
import Testing
import TestSupport

@testable import Dashboard

/// Each Log line carries the time of its event, never the judged-at instant, and lines stay in
/// time order whatever order their events arrive in.
@Suite struct LogTimesTests {
    @Test func aLineCarriesTheTimeOfItsEventInOrder() {
        let words = Wording("log-times")
        let started = Date(timeIntervalSince1970: 1_796_000_000)
        var state = DashboardState(now: started)
        state.wallClock = started.addingTimeInterval(14)
        state.addLog("loaded a receipt")
        state.addLog("an API answer", at: started.addingTimeInterval(28))
        state.addLog("a retry that happened earlier", at: started.addingTimeInterval(20))
        state.wallClock = started.addingTimeInterval(80)
        state.addLog("a write's answer")
        #expect(state.log.map(\.time.timeIntervalSince1970) == [1_796_000_014, 1_796_000_020, 1_796_000_028, 1_796_000_080])
        words.said(state.log.map(\.text))
        words.check()
    }
}
