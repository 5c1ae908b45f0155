// Input sniffing and every decoder: PKCS#7 DER/BER, base64, iOS 6 plist, verifyReceipt
// responses and V1 notifications, JSON wrappers, StoreKit 2 JWS, quoted and log-line inputs.
//
// Whatever decodes is also rendered the way `inspect` shows it (text, JSON, purchase analysis),
// since decoded values are untrusted too.
//
// Checks beyond "no crash, no hang, no leak": the fast DER paths and the swift-asn1 paths
// agree whenever both read an input.
import Foundation
@_spi(Fuzzing) import ReceiptCore
import ReceiptRendering

// Static members, not top-level globals: main.swift globals would only be set up by a `main`
// that libFuzzer replaces.
enum Harness {
    static let fastDecoder = FuzzingEntryPoints.decoder(fastPaths: true)
    static let now = Date(timeIntervalSince1970: 1_790_000_000)
    static let slowDecoder = FuzzingEntryPoints.decoder(fastPaths: false)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecode(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let fast = Harness.fastDecoder.result(bytes)
    if case .success(let decoded) = fast {
        _ = TextSummary.render(decoded)
        _ = InspectJSON.encode(InspectJSON.object(for: decoded))
        _ = AnalysisRendering.text(PurchaseAnalysis.analyze([decoded], at: Harness.now))
    }
    // The swift-asn1 path only differs for binary PKCS#7; skip the second decode otherwise.
    let asn1Codes: [ReceiptDecodingError.Code] = [.invalidPKCS7, .invalidReceiptPayload, .invalidASN1, .limitExceeded]
    guard fast.decodedFormat == .pkcs7 || fast.failureCode.map(asn1Codes.contains) == true else { return 0 }
    let slow = Harness.slowDecoder.result(bytes)
    switch (fast, slow) {
    case (.success(let a), .success(let b)):
        if a != b {
            fatalError("fast and swift-asn1 paths decode the same PKCS#7 input differently")
        }
    case (.failure, .failure):
        break  // codes and messages may differ: the fast path defers to swift-asn1 for its errors
    case (.success, .failure):
        // By design: the fast scan keeps certificates as opaque byte ranges, while swift-asn1
        // parses every nested element (and its depth bound) up front. A certificate with a
        // broken inside decodes on the fast path and fails later, in the trust check.
        break
    case (.failure(let e), .success):
        fatalError("fast path refuses a PKCS#7 input that swift-asn1 accepts: \(e.code)")
    }
    return 0
}

extension Result where Success == DecodedInput, Failure == ReceiptDecodingError {
    var decodedFormat: ReceiptFormat? { (try? get())?.format }
    var failureCode: ReceiptDecodingError.Code? {
        if case .failure(let e) = self { return e.code }
        return nil
    }
}

// Built without -sanitize=fuzzer (a plain `swift build --package-path Fuzz`, as CI checks that the
// harnesses still compile), this is the program: each file named runs once through the harness,
// as libFuzzer replays an input. A fuzzing build links libFuzzer's `main` instead.
for path in CommandLine.arguments.dropFirst() {
    let bytes = [UInt8](FileManager.default.contents(atPath: path) ?? Data()) + [0]
    _ = bytes.withUnsafeBufferPointer { fuzzDecode($0.baseAddress!, $0.count - 1) }
}
