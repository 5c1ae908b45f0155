// The OpenStep plist reader (iOS 6 transaction receipts and their purchase-info).
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
