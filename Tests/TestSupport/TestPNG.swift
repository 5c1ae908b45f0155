/// PNG files built by the tests, of any size without their pixels: the signature, an `IHDR`,
/// an optional `tRNS`, an `IDAT` holding an empty zlib stream (one stored deflate block) and
/// `IEND`, each chunk with its CRC-32 computed here (independently of the code under test).
/// What Apple's size and transparency rules read is all in the header.
public enum TestPNG {
    /// A PNG header of `width` × `height`; colour type 2 (RGB, no alpha) at 8 bits by default.
    public static func make(width: UInt32, height: UInt32, colourType: UInt8 = 2, bitDepth: UInt8 = 8, transparencyChunk: Bool = false) -> [UInt8] {
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        out += chunk("IHDR", be(width) + be(height) + [bitDepth, colourType, 0, 0, 0])
        if transparencyChunk { out += chunk("tRNS", [0, 0]) }
        // zlib header, a final stored block of length 0, the Adler-32 of nothing.
        out += chunk("IDAT", [0x78, 0x01, 0x01, 0x00, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01])
        out += chunk("IEND", [])
        return out
    }

    /// Full size (3840 wide) of `height`.
    public static func fullSize(height: UInt32 = 1200) -> [UInt8] { make(width: 3840, height: height) }

    /// A 1024 × 1024 bullet image.
    public static func bullet() -> [UInt8] { make(width: 1024, height: 1024) }

    public static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + data
        return be(UInt32(data.count)) + typed + be(crc(typed))
    }

    static func be(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }

    /// CRC-32 (polynomial 0xEDB88320), bit by bit.
    static func crc(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            c ^= UInt32(byte)
            for _ in 0..<8 { c = (c >> 1) ^ (c & 1 == 1 ? 0xEDB8_8320 : 0) }
        }
        return ~c
    }
}
