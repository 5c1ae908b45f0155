// The OpenStep plist reader (iOS 6 transaction receipts and their purchase-info).
import Foundation
import ReceiptCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPlist(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    do {
        let value = try OpenStepPlist.parse(bytes, maximumDepth: 64)
        _ = value["purchase-info"]?.string
    } catch let error as ReceiptDecodingError {
        precondition(error.offset.map { $0 >= 0 && $0 <= size } ?? true, "error offset outside the input")
    } catch {
        fatalError("untyped error from OpenStepPlist.parse: \(error)")
    }
    return 0
}

// Built without -sanitize=fuzzer (a plain `swift build --package-path Fuzz`, as CI checks that the
// harnesses still compile), this is the program: each file named runs once through the harness,
// as libFuzzer replays an input. A fuzzing build links libFuzzer's `main` instead.
for path in CommandLine.arguments.dropFirst() {
    let bytes = [UInt8](FileManager.default.contents(atPath: path) ?? Data()) + [0]
    _ = bytes.withUnsafeBufferPointer { fuzzPlist($0.baseAddress!, $0.count - 1) }
}
