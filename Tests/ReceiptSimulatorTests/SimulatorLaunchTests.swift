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

    private func refusal(_ launch: SimulatorLaunch) -> String? {
        do {
            try launch.check()
            return nil
        } catch {
            return error.reason
        }
    }

    @Test func theDefaultsAndASenderToLoopbackPass() {
        #expect(refusal(SimulatorLaunch(console: ConsoleCapture().console())) == nil)
        #expect(refusal(sending()) == nil)
    }

    @Test func eachSettingOutOfRangeIsNamedByItsFlag() {
        var launch = SimulatorLaunch(console: ConsoleCapture().console())
        launch.faultRate = 1.5
        #expect(refusal(launch) == "--fault-rate must be between 0 and 1.")
        launch = SimulatorLaunch(console: ConsoleCapture().console())
        launch.apiFaultRate = -0.1
        #expect(refusal(launch) == "--api-fault-rate must be between 0 and 1.")
        launch = SimulatorLaunch(console: ConsoleCapture().console())
        launch.latency = -1
        #expect(refusal(launch) == "--latency must not be negative.")
        #expect(refusal(sending { $0.rate = .infinity })?.hasPrefix("--notification-rate must be 0") == true)
        #expect(refusal(sending { $0.count = 10_000_001 }) == "--notification-count must be between 0 and 10000000.")
        #expect(refusal(sending { $0.concurrency = 0 }) == "--notification-concurrency must be between 1 and 4096.")
        #expect(refusal(sending { $0.timeout = 0 }) == "--notification-timeout must be more than 0 and at most 3600 seconds.")
        #expect(refusal(sending { $0.waitForReceiver = 3601 }) == "--wait-for-receiver must be between 0 and 3600 seconds.")
    }

    @Test func plainHTTPToAnotherHostIsRefused() {
        let reason = refusal(sending { $0.url = "http://receiver.example.com/notifications" })
        #expect(reason?.hasPrefix("--send-notifications: ") == true)
    }
}
