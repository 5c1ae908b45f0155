#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether `a` and `b` hold the same bytes, compared with `memcmp` (an array's own `==`
/// compares one element at a time): the header memo and the chain cache compare kilobytes of
/// text and DER per token.
func sameBytes(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
    guard a.count == b.count else { return false }
    return a.withUnsafeBytes { x in
        // The same storage is the same bytes: a token whose header came from the header memo
        // shares its certificates' arrays with the chain cache's key.
        b.withUnsafeBytes { y in x.count == 0 || x.baseAddress == y.baseAddress || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
    }
}
