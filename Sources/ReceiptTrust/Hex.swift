/// Lower-case hexadecimal.
public enum Hex {
    /// - Parameter separator: put between bytes (e.g. `":"` for serial numbers).
    public static func encode(_ bytes: some Sequence<UInt8>, separator: Character? = nil) -> String {
        let digits = Array("0123456789abcdef".utf8)
        let sep = separator.map { Array(String($0).utf8) } ?? []
        var out = [UInt8]()
        for b in bytes {
            if !out.isEmpty { out += sep }
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
