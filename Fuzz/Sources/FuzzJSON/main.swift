// The JSON reader (`JSONValue.parse`), with its nesting guard.
import ReceiptCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    do {
        let value = try JSONValue.parse(bytes, maximumDepth: 64)
        _ = value.object?.keys.count
    } catch let error as ReceiptDecodingError {
        precondition(error.offset.map { $0 >= 0 && $0 <= size } ?? true, "error offset outside the input")
    } catch {
        fatalError("untyped error from JSONValue.parse: \(error)")
    }
    return 0
}
