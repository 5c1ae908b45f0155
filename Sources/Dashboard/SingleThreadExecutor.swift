import Dispatch
import Foundation
import Synchronization

/// A task executor that runs every job on one dedicated thread.
///
/// The dashboard loop is async (it awaits the pipeline) but the terminal library is not
/// thread-safe and its resize and interrupt signals are delivered to the thread that waits for
/// keys. Run the loop with this executor as its preference and every part of it, before and
/// after each `await`, runs on the same thread:
///
/// ```swift
/// let ui = SingleThreadExecutor(name: "receiptdash-ui")
/// await withTaskExecutorPreference(ui) { await DashboardApp.run(&state, backend: makeTerminal()) }
/// ```
///
/// The thread lives as long as the process (the dashboard runs once per process).
public final class SingleThreadExecutor: TaskExecutor, Sendable {
    private let queue = Mutex<[UnownedJob]>([])
    private let wake = DispatchSemaphore(value: 0)

    public init(name: String) {
        let thread = Thread { [self] in
            while true {
                wake.wait()
                guard let job = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }
        thread.name = name
        thread.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.withLock { $0.append(job) }
        wake.signal()
    }
}
