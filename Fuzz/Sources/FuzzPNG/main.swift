// The retention image check (`PNGCheck`): any bytes end in a header or a coded refusal, for
// both of Apple's sizes, never a crash.
import AppStoreAPI
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPNG(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for imageSize in RetentionImageSize.allCases {
        do throws(RetentionLimitError) {
            let header = try PNGCheck.check(bytes, size: imageSize)
            precondition(!header.hasTransparency, "a transparent image passed")
        } catch {
            precondition(error.apiErrorCode != nil, "a PNG refusal without Apple's code")
        }
    }
    return 0
}

// Built without -sanitize=fuzzer (a plain `swift build --package-path Fuzz`, as CI checks that the
// harnesses still compile), this is the program: each file named runs once through the harness,
// as libFuzzer replays an input. A fuzzing build links libFuzzer's `main` instead.
for path in CommandLine.arguments.dropFirst() {
    let bytes = [UInt8](FileManager.default.contents(atPath: path) ?? Data()) + [0]
    _ = bytes.withUnsafeBufferPointer { fuzzPNG($0.baseAddress!, $0.count - 1) }
}
