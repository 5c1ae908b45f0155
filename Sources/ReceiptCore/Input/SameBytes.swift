#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether `a` and `b` hold the same bytes, compared with `memcmp` (an array's own `==`
/// compares one element at a time): the header memo and the chain cache compare kilobytes of
/// text and DER per token.
package func sameBytes(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
    guard a.count == b.count else { return false }
    return a.withUnsafeBytes { x in
        // The same storage is the same bytes: a token whose header came from the header memo
        // shares its certificates' arrays with the chain cache's key.
        b.withUnsafeBytes { y in x.count == 0 || x.baseAddress == y.baseAddress || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
    }
}

/// Feeds `hasher` the count of `bytes` and at most `head` bytes from their start and `tail`
/// from their end, for keys of kilobytes compared with ``sameBytes(_:_:)``: hashing every
/// byte of a 4 KB JWS header or a certificate cost more than the look-up it served. Keys that
/// share those bytes only share a bucket; their comparison still tells them apart.
package func hashSample(_ bytes: ArraySlice<UInt8>, head: Int, tail: Int, into hasher: inout Hasher) {
    hasher.combine(bytes.count)
    bytes.withUnsafeBytes { raw in
        if raw.count <= head + tail {
            hasher.combine(bytes: raw)
        } else {
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw.prefix(head)))
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw.suffix(tail)))
        }
    }
}
