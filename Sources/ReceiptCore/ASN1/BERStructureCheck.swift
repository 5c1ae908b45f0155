/// Finds where a BER/DER byte string stops being well formed.
///
/// swift-asn1 does the parsing; when it refuses an input it says *what* (e.g. "truncated
/// field") but not *where*. This walker re-reads the tag-length structure only, with the same
/// depth bound, and reports the first problem with its byte offset, so a support engineer sees
/// "ASN.1 length at byte 1734 says 300 bytes but only 120 remain" instead of a bare code.
enum BERStructureCheck {
    /// Deepest nesting accepted, the same as swift-asn1's own bound.
    static let maximumDepth = 50

    struct Problem: Error, Equatable {
        var offset: Int
        var message: String
    }

    /// Returns the first structural problem in `bytes`, or `nil` if the tag-length structure is
    /// well formed. Offsets are `bytes`' own indices.
    static func firstProblem(in bytes: ArraySlice<UInt8>) -> Problem? {
        do {
            guard !bytes.isEmpty else { return Problem(offset: bytes.startIndex, message: "no ASN.1 data") }
            let end = try element(bytes, at: bytes.startIndex, limit: bytes.endIndex, depth: 1)
            if end != bytes.endIndex {
                return Problem(
                    offset: end,
                    message: "\(bytes.endIndex - end) unexpected bytes after the end of the ASN.1 structure at byte \(end)")
            }
            return nil
        } catch let problem as Problem {
            return problem
        } catch {
            return Problem(offset: bytes.startIndex, message: "\(error)")
        }
    }

    /// Reads the element starting at `start`; returns the index just past it.
    private static func element(_ b: ArraySlice<UInt8>, at start: Int, limit: Int, depth: Int) throws -> Int {
        guard depth <= maximumDepth else {
            throw Problem(offset: start, message: "ASN.1 nesting at byte \(start) is deeper than \(maximumDepth) levels")
        }
        var p = start
        let tag = b[p]
        let constructed = tag & 0x20 != 0
        p += 1
        if tag & 0x1F == 0x1F {
            var count = 0
            repeat {
                guard p < limit else {
                    throw Problem(offset: start, message: "ASN.1 tag at byte \(start) is cut off by the end of the input")
                }
                count += 1
                guard count <= 4 else {
                    throw Problem(offset: start, message: "ASN.1 tag at byte \(start) is longer than 4 bytes")
                }
                p += 1
            } while b[p - 1] & 0x80 != 0
        }
        guard p < limit else {
            throw Problem(offset: p, message: "ASN.1 element at byte \(start) has no length: the input ends at byte \(p)")
        }
        let lengthOffset = p
        let first = b[p]
        p += 1
        if first == 0x80 {
            guard constructed else {
                throw Problem(
                    offset: lengthOffset,
                    message: "ASN.1 element at byte \(start) is primitive but uses an indefinite length")
            }
            while true {
                guard p + 1 < limit else {
                    throw Problem(
                        offset: start,
                        message: "indefinite-length ASN.1 element at byte \(start) has no end-of-contents marker before the end of the input")
                }
                if b[p] == 0, b[p + 1] == 0 { return p + 2 }
                p = try element(b, at: p, limit: limit, depth: depth + 1)
            }
        }
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard count <= 4 else {
                throw Problem(
                    offset: lengthOffset,
                    message: "ASN.1 length at byte \(lengthOffset) uses \(count) bytes; no receipt needs more than 4")
            }
            guard p + count <= limit else {
                throw Problem(offset: lengthOffset, message: "ASN.1 length at byte \(lengthOffset) is cut off by the end of the input")
            }
            for _ in 0..<count {
                length = length << 8 | Int(b[p])
                p += 1
            }
        }
        let remaining = limit - p
        guard length <= remaining else {
            throw Problem(
                offset: lengthOffset,
                message: "ASN.1 length at byte \(lengthOffset) runs past the end of the input: it says \(length) bytes but only \(remaining) remain")
        }
        let end = p + length
        if constructed {
            while p < end {
                p = try element(b, at: p, limit: end, depth: depth + 1)
            }
        }
        return end
    }
}
