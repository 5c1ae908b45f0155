// Decode, then judge the signature: JWS (x5c chain, ES256, nested notification tokens), and
// likewise PKCS#7 and iOS 6 receipts when the fuzzer turns the input into one.
import Dispatch
import Foundation
import ReceiptCore
import ReceiptTrust
import Synchronization

enum Harness {
    static let decoder = ReceiptDecoder()
    /// A fixed "now", so a run does not change behaviour as the clock moves.
    static let options = TrustOptions(now: Date(timeIntervalSince1970: 1_790_000_000))
}

/// The one place that calls the trust evaluator, which is `async` (swift-certificates'
/// `Verifier`). It runs in a task and this thread waits for it: blocking is acceptable here only
/// because libFuzzer calls `LLVMFuzzerTestOneInput` on the main thread, outside Swift's
/// cooperative pool, so the task always has a thread to run on.
func evaluateTrust(_ input: DecodedInput) -> TrustReport {
    let result = ReportBox()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        // A fresh cache per input: a run stays deterministic (no state carried between inputs).
        let report = await TrustEvaluator(cache: TrustCache()).evaluate(input, options: Harness.options)
        result.report.withLock { $0 = report }
        done.signal()
    }
    done.wait()
    return result.report.withLock { $0! }
}

final class ReportBox: Sendable {
    let report = Mutex<TrustReport?>(nil)
}

/// Builds the process-wide trust anchors (`TrustAnchors.apple`, parsed once behind a
/// `swift_once`) before fuzzing starts. Built during the first input instead, LeakSanitizer
/// reports them as a leak of that input: Swift keeps the certificates behind pointers packed
/// with spare bits (enum payloads), which LSan's pointer scan does not recognise. They are
/// allocated once per process and never grow, so they are no leak; see README "Leaks".
@_cdecl("LLVMFuzzerInitialize")
public func initialize(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> CInt {
    _ = TrustEvaluator().anchors
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWSTrust(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    guard let decoded = try? Harness.decoder.decode(bytes) else { return 0 }
    let report = evaluateTrust(decoded)
    _ = report.headline
    return 0
}

// Built without -sanitize=fuzzer (a plain `swift build --package-path Fuzz`, as CI checks that the
// harnesses still compile), this is the program: each file named runs once through the harness,
// as libFuzzer replays an input. A fuzzing build links libFuzzer's `main` instead.
for path in CommandLine.arguments.dropFirst() {
    let bytes = [UInt8](FileManager.default.contents(atPath: path) ?? Data()) + [0]
    _ = bytes.withUnsafeBufferPointer { fuzzJWSTrust($0.baseAddress!, $0.count - 1) }
}
