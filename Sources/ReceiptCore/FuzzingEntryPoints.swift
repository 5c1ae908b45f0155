/// The internals the libFuzzer harnesses in `Fuzz/` need. That package sees only public API,
/// so they are opened here as `@_spi(Fuzzing)`, in this one file: the decoders themselves
/// carry no fuzzing annotations, and `@testable` tests keep their access (an `@_spi`
/// declaration would need `@_spi(Fuzzing) import` even under `@testable`).
@_spi(Fuzzing) public enum FuzzingEntryPoints {
    /// A decoder with the DER fast paths on (the default) or off (swift-asn1 only).
    public static func decoder(fastPaths: Bool) -> ReceiptDecoder {
        var decoder = ReceiptDecoder()
        decoder.fastPaths = fastPaths
        return decoder
    }

    /// `PKCS7SignedData(berEncoded:)` on the fast DER scan or on swift-asn1 only.
    public static func pkcs7(_ bytes: [UInt8], fastPath: Bool) throws -> PKCS7SignedData {
        try PKCS7SignedData(berEncoded: bytes, fastPath: fastPath)
    }

    /// The byte offset and message of the first BER structure problem, or `nil`.
    public static func firstBERProblem(in bytes: ArraySlice<UInt8>) -> (offset: Int, message: String)? {
        BERStructureCheck.firstProblem(in: bytes).map { ($0.offset, $0.message) }
    }
}
