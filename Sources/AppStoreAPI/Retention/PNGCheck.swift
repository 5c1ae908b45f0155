import Foundation

/// What Apple accepts as a retention image, read from the file's first chunks: the PNG
/// signature, the `IHDR` header (size, bit depth, colour type) and whether a `tRNS` chunk
/// comes before the image data. Apple refuses transparency and sizes other than
/// `FULL_SIZE` (3840 px wide, 160–2160 px tall) and `BULLET_POINT` (1024 × 1024).
///
/// The check reads chunk headers only up to the first `IDAT` (where PNG puts `tRNS`), steps
/// over each chunk by its stated length (so it is linear in the bytes and never loops), checks
/// every CRC it passes, and refuses truncated or malformed data with a code; it never
/// decompresses the image.
public enum PNGCheck {
    /// The facts read from a PNG's header.
    public struct Header: Sendable, Hashable {
        public var width: UInt32
        public var height: UInt32
        public var bitDepth: UInt8
        /// 0 grey, 2 RGB, 3 palette, 4 grey + alpha, 6 RGB + alpha.
        public var colourType: UInt8
        /// A `tRNS` chunk (transparency for grey, RGB or palette images) was found.
        public var hasTransparencyChunk: Bool

        public init(width: UInt32, height: UInt32, bitDepth: UInt8, colourType: UInt8, hasTransparencyChunk: Bool) {
            self.width = width
            self.height = height
            self.bitDepth = bitDepth
            self.colourType = colourType
            self.hasTransparencyChunk = hasTransparencyChunk
        }

        /// Alpha in the colour type, or a `tRNS` chunk.
        public var hasTransparency: Bool { colourType == 4 || colourType == 6 || hasTransparencyChunk }
    }

    public static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    /// `FULL_SIZE`: exactly this wide.
    public static let fullSizeWidth: UInt32 = 3840
    /// `FULL_SIZE`: this tall, inclusive.
    public static let fullSizeHeights: ClosedRange<UInt32> = 160...2160
    /// `BULLET_POINT`: this wide and tall.
    public static let bulletPointSide: UInt32 = 1024
    /// Most chunks read before the first `IDAT` (a real PNG has a handful).
    static let maximumChunksBeforeData = 1000

    /// The header of `bytes`, or why it is not a PNG this check can read (code
    /// ``RetentionLimitError/Code/imageInvalid``, Apple's 4000161).
    public static func header(_ bytes: [UInt8]) throws(RetentionLimitError) -> Header {
        func invalid(_ why: String) -> RetentionLimitError { RetentionLimitError(.imageInvalid, value: why) }
        guard bytes.count >= signature.count, bytes.prefix(signature.count).elementsEqual(signature) else {
            throw invalid("not a PNG file (the PNG signature is missing)")
        }
        var offset = signature.count
        var header: Header?
        var chunks = 0
        while true {
            guard bytes.count - offset >= 12 else {
                throw invalid(header == nil ? "the file ends before the IHDR header" : "the file ends before the image data (IDAT)")
            }
            let length = Int(readUInt32(bytes, offset))
            let typeBytes = Array(bytes[(offset + 4)..<(offset + 8)])
            guard length <= 0x7FFF_FFFF, bytes.count - offset - 12 >= length else {
                throw invalid("the file ends inside a chunk (\(typeName(typeBytes)))")
            }
            let data = (offset + 8)..<(offset + 8 + length)
            let storedCRC = readUInt32(bytes, offset + 8 + length)
            guard crc32(bytes[(offset + 4)..<(offset + 8 + length)]) == storedCRC else {
                throw invalid("the \(typeName(typeBytes)) chunk's CRC is wrong (a damaged file)")
            }
            let type = typeName(typeBytes)
            if header == nil {
                guard type == "IHDR", length == 13 else { throw invalid("the first chunk is not a 13-byte IHDR header") }
                let width = readUInt32(bytes, data.lowerBound)
                let height = readUInt32(bytes, data.lowerBound + 4)
                let depth = bytes[data.lowerBound + 8]
                let colour = bytes[data.lowerBound + 9]
                guard width > 0, height > 0, width <= 0x7FFF_FFFF, height <= 0x7FFF_FFFF else { throw invalid("the IHDR size is zero or too large") }
                guard validDepths(colour).contains(depth) else { throw invalid("IHDR colour type \(colour) with bit depth \(depth) is not a PNG combination") }
                guard bytes[data.lowerBound + 10] == 0, bytes[data.lowerBound + 11] == 0, bytes[data.lowerBound + 12] <= 1 else {
                    throw invalid("the IHDR compression, filter or interlace method is not PNG's")
                }
                header = Header(width: width, height: height, bitDepth: depth, colourType: colour, hasTransparencyChunk: false)
            } else if type == "IDAT", let header {
                return header
            } else if type == "IEND" {
                throw invalid("the file has no image data (IEND before IDAT)")
            } else if type == "tRNS" {
                header?.hasTransparencyChunk = true
            } else if type == "IHDR" {
                throw invalid("the file has two IHDR headers")
            }
            offset += 12 + length
            chunks += 1
            guard chunks <= maximumChunksBeforeData else { throw invalid("more than \(maximumChunksBeforeData) chunks before the image data") }
        }
    }

    /// The header of `bytes`, checked for `size`: no transparency, and the size's dimensions
    /// (``RetentionLimitError/Code/imageTransparent`` → 4000161,
    /// ``RetentionLimitError/Code/imageSizeInvalid`` → 4000216).
    @discardableResult
    public static func check(_ bytes: [UInt8], size: RetentionImageSize) throws(RetentionLimitError) -> Header {
        let header = try header(bytes)
        if header.hasTransparency {
            let how = header.hasTransparencyChunk ? "a tRNS transparency chunk" : "an alpha channel (colour type \(header.colourType))"
            throw RetentionLimitError(.imageTransparent, value: how)
        }
        let fits: Bool =
            switch size {
            case .fullSize: header.width == fullSizeWidth && fullSizeHeights.contains(header.height)
            case .bulletPoint: header.width == bulletPointSide && header.height == bulletPointSide
            }
        guard fits else { throw RetentionLimitError(.imageSizeInvalid, value: "\(header.width) × \(header.height) px for \(size.rawValue)") }
        return header
    }

    static func validDepths(_ colourType: UInt8) -> [UInt8] {
        switch colourType {
        case 0: [1, 2, 4, 8, 16]
        case 3: [1, 2, 4, 8]
        case 2, 4, 6: [8, 16]
        default: []
        }
    }

    static func readUInt32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }

    /// A chunk type as text when it is four ASCII letters, else its bytes in hex.
    static func typeName(_ type: [UInt8]) -> String {
        type.allSatisfy({ (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
            ? String(decoding: type, as: UTF8.self) : type.map { String(format: "%02x", $0) }.joined()
    }

    static let crcTable: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// PNG's CRC-32 (ISO 3309) of a chunk's type and data.
    static func crc32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for byte in bytes { c = crcTable[Int((c ^ UInt32(byte)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}
