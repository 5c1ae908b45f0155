// The notification receiver's whole decision, body bytes in, status and stored row out:
// `NotificationReceiver.handle` with an in-memory store. Checks what the receiver promises a
// hostile client: only the statuses it documents; a 200 stores exactly the one `signedPayload`
// string of a body that has no other key (or an unsigned V1 body with the shared secret); a
// refusal stores no notification; the client is told a class of refusal, never the detail.
import AppStoreAPI
import AuditTrail
import Dispatch
import Foundation
import Logging
import NotificationReceiver
import ReceiptCore
import ReceiptTrust
import Synchronization

/// Keeps the last notification appended, and counts refusals; emptied before each input.
final class MemorySink: NotificationSink {
    let state = Mutex<(last: NotificationRecord?, appended: Int, refused: Int)>((nil, 0, 0))

    func reset() { state.withLock { $0 = (nil, 0, 0) } }

    func append(_ record: NotificationRecord) async throws(NotificationStoreError) -> AppendOutcome {
        state.withLock {
            $0.last = record
            $0.appended += 1
        }
        return .stored
    }

    func reject(_ record: RejectionRecord) async throws(NotificationStoreError) {
        state.withLock { $0.refused += 1 }
    }

    func isWritable() async -> Bool { true }
}

enum Harness {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)
    static let metrics = ReceiverMetrics()
    static let logger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
    /// Both environments, any signedDate, V1 with the fixture's secret, any bundle: so Apple's
    /// genuine corpus is accepted and the fuzzer starts from bodies that pass.
    static let policy = ReceiverPolicy(
        environments: [.production, .sandbox], v1SharedSecret: SharedSecret("dummy_shared_secret"), maximumAge: nil,
        maximumClockSkew: .seconds(100 * 365 * 86_400))
    static let publicReasons = Set(RefusalKind.allCases.map(\.publicReason) + ["stored", "already stored"])
    static let sink = MemorySink()
    /// One receiver for the whole run, as in production: its trust cache warms on the seeds'
    /// genuine chains, so a mutated payload under a genuine header costs one signature check,
    /// and the cache's promise (only verified tokens fill it) is fuzzed across inputs too.
    /// Its memory is held for the run, so LeakSanitizer is off for this target (run.sh).
    static let receiver = NotificationReceiver(
        sink: sink, policy: policy, logger: logger, metrics: metrics, now: { Harness.now })
}

final class AnswerBox: Sendable {
    let answer = Mutex<ReceiveAnswer?>(nil)
}

/// `handle` is async; libFuzzer calls this on the main thread, outside Swift's cooperative
/// pool, so waiting here always leaves the task a thread to run on.
func decide(_ body: [UInt8]) -> ReceiveAnswer {
    let box = AnswerBox()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        let answer = await Harness.receiver.handle(body: body, declaredLength: nil, truncated: false, peer: "192.0.2.1:443")
        box.answer.withLock { $0 = answer }
        done.signal()
    }
    done.wait()
    return box.answer.withLock { $0! }
}

@_cdecl("LLVMFuzzerInitialize")
public func initialize(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> CInt {
    _ = TrustEvaluator().anchors
    _ = Harness.receiver
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReceiver(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Array(UnsafeBufferPointer(start: data, count: size))
    let sink = Harness.sink
    sink.reset()
    let answer = decide(body)
    let (stored, appended, refused) = sink.state.withLock { ($0.last, $0.appended, $0.refused) }
    precondition([200, 400, 403, 413, 503].contains(answer.status), "undocumented status \(answer.status)")
    precondition(Harness.publicReasons.contains(answer.publicReason), "the client was told the detail: \(answer.publicReason)")
    if answer.status == 200 {
        precondition(appended == 1 && refused == 0, "a 200 stored \(appended) notifications")
        let record = stored!
        let object = (try? JSONValue.parse(body))?.object
        if record.version == .v2 {
            precondition(object?.count == 1, "a 200 for a body with keys besides signedPayload")
            precondition(object?["signedPayload"]?.text == record.signedPayload, "the stored string is not the body's signedPayload")
            precondition(record.verdict == .valid || record.verdict == .test, "stored as \(record.verdict.rawValue)")
        } else {
            precondition(record.signedPayload == nil && record.verdict == .unverifiable, "a V1 row kept a payload")
            precondition(object?["password"]?.text == "dummy_shared_secret", "a V1 body without the secret was stored")
        }
    } else {
        precondition(appended == 0, "a refusal (\(answer.status)) stored a notification")
        precondition(answer.refusal != nil, "a refusal without its class")
    }
    return 0
}

// Built without -sanitize=fuzzer (a plain `swift build --package-path Fuzz`, as CI checks that the
// harnesses still compile), this is the program: each file named runs once through the harness,
// as libFuzzer replays an input. A fuzzing build links libFuzzer's `main` instead.
for path in CommandLine.arguments.dropFirst() {
    let bytes = [UInt8](FileManager.default.contents(atPath: path) ?? Data()) + [0]
    _ = bytes.withUnsafeBufferPointer { fuzzReceiver($0.baseAddress!, $0.count - 1) }
}
