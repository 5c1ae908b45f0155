// PKCS#7 SignedData and BER structure reading, below the receipt payload.
//
// Checks: the fast definite-length scan and swift-asn1 agree on every container; the BER
// structure walker (which names the byte offset of the first problem) never crashes, and its
// offset lies inside the input.
import Foundation
@_spi(Fuzzing) import ReceiptCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPKCS7(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let problem = FuzzingEntryPoints.firstBERProblem(in: bytes[...]) {
        precondition(problem.offset >= 0 && problem.offset <= bytes.count, "problem offset outside the input")
    }
    // The same walk over a slice that does not start at index 0 (offsets are the slice's own).
    if bytes.count > 1 {
        let tail = bytes[1...]
        if let problem = FuzzingEntryPoints.firstBERProblem(in: tail) {
            precondition(problem.offset >= 1 && problem.offset <= bytes.count, "problem offset outside the slice")
        }
    }
    let fast = Result { try FuzzingEntryPoints.pkcs7(bytes, fastPath: true) }
    let slow = Result { try FuzzingEntryPoints.pkcs7(bytes, fastPath: false) }
    switch (fast, slow) {
    case (.success(let a), .success(let b)):
        precondition(a == b, "fast scan and swift-asn1 read the same container differently")
    case (.failure, .failure):
        break
    case (.success, .failure):
        // By design: the fast scan keeps certificates as opaque byte ranges, while swift-asn1
        // parses every nested element (and its depth bound) up front. A certificate with a
        // broken inside decodes on the fast path and fails later, in the trust check.
        break
    case (.failure(let e), .success):
        fatalError("fast scan refuses a container that swift-asn1 accepts: \(e)")
    }
    return 0
}

// Built without -sanitize=fuzzer (a plain `swift build --package-path Fuzz`, as CI checks that the
// harnesses still compile), this is the program: each file named runs once through the harness,
// as libFuzzer replays an input. A fuzzing build links libFuzzer's `main` instead.
for path in CommandLine.arguments.dropFirst() {
    let bytes = [UInt8](FileManager.default.contents(atPath: path) ?? Data()) + [0]
    _ = bytes.withUnsafeBufferPointer { fuzzPKCS7($0.baseAddress!, $0.count - 1) }
}
