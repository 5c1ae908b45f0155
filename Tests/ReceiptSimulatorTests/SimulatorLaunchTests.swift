import ReceiptCore
import ReceiptSimulator
import Testing
import UntrustedText

/// `receiptdash simulator`'s settings, checked before it serves.
@Suite struct SimulatorLaunchTests {
    private func sending(_ change: (inout SimulatorLaunch.Sending) -> Void = { _ in }) -> SimulatorLaunch {
        var sending = SimulatorLaunch.Sending(
            url: "http://127.0.0.1:8098/notifications", rate: 0, count: nil, concurrency: 64, schedule: .apple, environment: .production,
            timeout: 10, exitWhenSent: false, waitForReceiver: 0)
        change(&sending)
        var launch = SimulatorLaunch(console: ConsoleCapture().console())
        launch.sending = sending
        return launch
    }

    /// The refusal's code and the setting it names, or nil when the settings pass.
    private func refusal(_ launch: SimulatorLaunch) -> String? {
        do {
            try launch.check()
            return nil
        } catch {
            return "\(error.code) \(error.setting ?? "-")"
        }
    }

    @Test func theDefaultsAndASenderToLoopbackPass() {
        #expect(refusal(SimulatorLaunch(console: ConsoleCapture().console())) == nil)
        #expect(refusal(sending()) == nil)
    }

    @Test func eachSettingOutOfRangeIsNamedByItsFlag() {
        var launch = SimulatorLaunch(console: ConsoleCapture().console())
        launch.faultRate = 1.5
        #expect(refusal(launch) == "out-of-range fault-rate")
        launch = SimulatorLaunch(console: ConsoleCapture().console())
        launch.apiFaultRate = -0.1
        #expect(refusal(launch) == "out-of-range api-fault-rate")
        launch = SimulatorLaunch(console: ConsoleCapture().console())
        launch.latency = -1
        #expect(refusal(launch) == "out-of-range latency")
        launch = SimulatorLaunch(console: ConsoleCapture().console())
        launch.ocsp = .init(revoke: ["root"])
        #expect(refusal(launch) == "unknown-value ocsp-revoke")
        #expect(refusal(sending { $0.rate = .infinity }) == "out-of-range notification-rate")
        #expect(refusal(sending { $0.count = 10_000_001 }) == "out-of-range notification-count")
        #expect(refusal(sending { $0.concurrency = 0 }) == "out-of-range notification-concurrency")
        #expect(refusal(sending { $0.timeout = 0 }) == "out-of-range notification-timeout")
        #expect(refusal(sending { $0.waitForReceiver = 3601 }) == "out-of-range wait-for-receiver")
        #expect(refusal(sending { $0.consumptionShare = 100.5 }) == "out-of-range notification-consumption-share")
        #expect(refusal(sending { $0.consumptionShare = -1 }) == "out-of-range notification-consumption-share")
        #expect(refusal(sending { $0.consumptionShare = 100 }) == nil)
        for (key, value, flag) in [
            (\PerformanceTestSettings.maxConcurrentRequests, 0, "perf-max-concurrent-requests"), (\.totalRequests, 1_000_001, "perf-total-requests"),
            (\.totalDuration, 0, "perf-total-duration-ms"), (\.responseTimeThreshold, 0, "perf-response-time-threshold-ms"),
            (\.successRateThreshold, 101, "perf-success-rate-threshold"),
        ] {
            launch = SimulatorLaunch(console: ConsoleCapture().console())
            launch.performanceTest[keyPath: key] = value
            #expect(refusal(launch) == "out-of-range \(flag)")
        }
    }

    @Test func plainHTTPToAnotherHostIsRefused() {
        #expect(refusal(sending { $0.url = "http://receiver.example.com/notifications" }) == "refused-receiver-url send-notifications")
    }
}
