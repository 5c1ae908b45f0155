import X509

extension RelativeDistinguishedName.Attribute.Value {
    /// The value as swift-certificates' `description` writes it (RFC 4514: a backslash before
    /// `,` `+` `"` `\` `<` `>` `;`, before a leading space or `#` and before trailing spaces),
    /// without its cost when there is nothing to escape: `description` builds an array per byte
    /// (about fifty allocations for a common name, five names a receipt: 2% of inspecting a
    /// folder). Text it would escape, or a value that is not a string, goes through it.
    var escapedText: String {
        guard let text = String(self) else { return description }
        let utf8 = text.utf8
        let special = utf8.contains { byte in
            switch byte {
            case 0x2C, 0x2B, 0x22, 0x5C, 0x3C, 0x3E, 0x3B: true  // , + " \ < > ;
            default: false
            }
        }
        let plain = !special && utf8.first != 0x20 && utf8.first != 0x23 && utf8.last != 0x20  // space, #
        return plain ? text : description
    }
}
