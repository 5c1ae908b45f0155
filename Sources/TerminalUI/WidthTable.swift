#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The C library's `wcwidth` for every code point, read once and kept as a two-stage table:
/// one block number per 256 code points, and the distinct blocks (a few hundred bytes each).
/// Lookups cost two array reads.
@usableFromInline
struct WidthTable: Sendable {
    /// Block number for each 256 code points (0x110000 / 256 entries).
    private let blockOf: [UInt16]
    /// The distinct blocks, 256 widths each (0, 1 or 2).
    private let widths: [UInt8]

    /// The table, built at first use (thread-safe, once per process).
    private static let shared = WidthTable.fromCLibrary() ?? WidthTable.fallback()

    @usableFromInline
    static func width(of value: UInt32) -> Int {
        shared.lookup(value)
    }

    /// Whether the widths came from the C library (false only where no UTF-8 locale exists).
    static var isFromCLibrary: Bool { shared.source }

    private let source: Bool

    private init(source: Bool, compute: (UInt32) -> UInt8) {
        var blockOf = [UInt16](repeating: 0, count: 0x1100)
        var widths: [UInt8] = []
        var seen: [[UInt8]: UInt16] = [:]
        var block = [UInt8](repeating: 0, count: 256)
        for b in 0..<0x1100 {
            let base = UInt32(b) << 8
            for i in 0..<256 { block[i] = compute(base | UInt32(i)) }
            if let number = seen[block] {
                blockOf[b] = number
            } else {
                let number = UInt16(seen.count)
                seen[block] = number
                blockOf[b] = number
                widths.append(contentsOf: block)
            }
        }
        self.blockOf = blockOf
        self.widths = widths
        self.source = source
    }

    @inline(__always)
    private func lookup(_ value: UInt32) -> Int {
        guard value < 0x110000 else { return 1 }
        return blockOf.withUnsafeBufferPointer { blocks in
            widths.withUnsafeBufferPointer { table in
                Int(table[Int(blocks[Int(value >> 8)]) << 8 | Int(value & 0xFF)])
            }
        }
    }

    /// The columns ncurses gives a code point whose `wcwidth` is `w`: controls none (they
    /// never reach a cell), other non-printable code points one cell, the rest `wcwidth`.
    static func columns(value: UInt32, wcwidth w: Int32) -> UInt8 {
        if w >= 0 { return UInt8(min(w, 2)) }
        if value < 0x20 || (0x7F..<0xA0).contains(value) { return 0 }
        return 1
    }

    /// Reads `wcwidth` for every code point under a UTF-8 locale set on this thread only.
    private static func fromCLibrary() -> WidthTable? {
        guard let locale = utf8Locale() else { return nil }
        defer { freelocale(locale) }
        let previous = uselocale(locale)
        defer { uselocale(previous) }
        return WidthTable(source: true) { value in
            // Surrogates are not characters; Unicode.Scalar never holds one.
            if (0xD800...0xDFFF).contains(value) { return 1 }
            return columns(value: value, wcwidth: wcwidth(wchar_t(bitPattern: value)))
        }
    }

    /// A UTF-8 LC_CTYPE locale: C.UTF-8 (built into current C libraries), else the
    /// environment's own when it is UTF-8, else a common one.
    private static func utf8Locale() -> locale_t? {
        var names = ["C.UTF-8", "C.utf8"]
        for variable in ["LC_ALL", "LC_CTYPE", "LANG"] {
            if let value = getenv(variable).map({ String(cString: $0) }), !value.isEmpty {
                if value.lowercased().replacingOccurrences(of: "-", with: "").contains("utf8") { names.append(value) }
                break
            }
        }
        names += ["en_US.UTF-8", "en_US.utf8"]
        for name in names {
            if let locale = newlocale(ctypeMask, name, nil) {
                // A name may be accepted yet not be UTF-8: check that a wide character works.
                let previous = uselocale(locale)
                let ok = wcwidth(wchar_t(0x4E00)) == 2
                uselocale(previous)
                if ok { return locale }
                freelocale(locale)
            }
        }
        return nil
    }

    /// The C library's `wcwidth` (the Glibc module hides it behind _XOPEN_SOURCE: look it up).
    private static let wcwidth: @convention(c) (wchar_t) -> Int32 = {
        #if canImport(Darwin)
        return Darwin.wcwidth
        #else
        guard let symbol = dlsym(nil, "wcwidth") else { return { _ in -1 } }
        return unsafeBitCast(symbol, to: (@convention(c) (wchar_t) -> Int32).self)
        #endif
    }()

    private static var ctypeMask: Int32 {
        #if canImport(Darwin)
        return LC_CTYPE_MASK
        #else
        return 1 << LC_CTYPE
        #endif
    }

    /// Without any UTF-8 locale ncurses cannot draw wide characters either; every printable
    /// code point then counts one column, combining diacritics none.
    private static func fallback() -> WidthTable {
        WidthTable(source: false) { value in
            if value < 0x20 || (0x7F..<0xA0).contains(value) { return 0 }
            if (0x300...0x36F).contains(value) || (0x200B...0x200F).contains(value) || (0xFE00...0xFE0F).contains(value) {
                return 0
            }
            return 1
        }
    }
}
