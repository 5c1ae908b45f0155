import SwiftASN1
import X509

extension DistinguishedName {
    /// The name as swift-certificates' `description` writes it (RFC 4514: the last RDN first,
    /// `,` between RDNs, `+` between an RDN's attributes, `KEY=value`), each value through
    /// ``RelativeDistinguishedName/Attribute/Value/escapedText``: `description` builds an array
    /// per byte of every value, about 250 allocations for an Apple subject.
    var text: String {
        var text = ""
        var firstRDN = true
        for rdn in reversed() {
            if !firstRDN { text += "," }
            firstRDN = false
            var firstAttribute = true
            for attribute in rdn {
                if !firstAttribute { text += "+" }
                firstAttribute = false
                text += attribute.keyText
                text += "="
                text += attribute.value.escapedText
            }
        }
        return text
    }
}

extension RelativeDistinguishedName.Attribute {
    /// The attribute's key as swift-certificates' `description` writes it: its short name, or
    /// its dotted OID.
    var keyText: String {
        switch type {
        case .RDNAttributeType.commonName: "CN"
        case .RDNAttributeType.countryName: "C"
        case .RDNAttributeType.localityName: "L"
        case .RDNAttributeType.stateOrProvinceName: "ST"
        case .RDNAttributeType.organizationName: "O"
        case .RDNAttributeType.organizationalUnitName: "OU"
        case .RDNAttributeType.streetAddress: "STREET"
        case .RDNAttributeType.domainComponent: "DC"
        case .RDNAttributeType.emailAddress: "E"
        default: String(describing: type)
        }
    }
}

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
