import Foundation
import SwiftASN1

/// Decodes the receipt payload signed inside the PKCS#7 container:
/// `SET OF SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`, where each value
/// holds the DER of the real field (a string, an integer, or for type 17 a nested in-app SET).
///
/// Known types become typed fields of ``AppReceipt`` and ``Purchase``; unknown ones are kept
/// with their type, version and raw bytes. A known field whose value has the wrong shape is kept
/// raw too, with a warning: one odd attribute never loses the rest of the receipt.
struct ReceiptPayloadDecoder {
    var limits: DecodingLimits
    /// `false` forces the swift-asn1 path (tests compare the two).
    var fastPath: Bool
    private(set) var warnings: [String] = []

    init(limits: DecodingLimits, fastPath: Bool = true) {
        self.limits = limits
        self.fastPath = fastPath
    }

    mutating func decode(_ payload: [UInt8]) throws -> AppReceipt {
        var receipt = AppReceipt()
        try forEachAttribute(in: payload[...], what: "receipt payload") { decoder, attribute, value in
            try decoder.apply(attribute, value: value, to: &receipt)
        }
        return receipt
    }

    /// Calls `body` for each attribute of the SET in `bytes`.
    private mutating func forEachAttribute(
        in bytes: ArraySlice<UInt8>, what: @autoclosure () -> String,
        _ body: (inout Self, _ attribute: (type: Int, version: Int, offset: Int), _ value: ArraySlice<UInt8>) throws -> Void
    ) throws {
        let base = bytes.startIndex
        if fastPath, let attributes = DERAttributeScanner.attributes(bytes) {
            for a in attributes {
                try body(&self, (a.type, a.version, a.offset - base), bytes[a.value])
            }
            return
        }
        // Not plain DER (or broken): swift-asn1's BER parser reads it, or says what is wrong.
        let what = what()
        let root = try ASN1Reading.parse(bytes, what: what, code: .invalidReceiptPayload)
        let items = try ASN1Reading.children(root, expecting: .set, what: what, base: base, code: .invalidReceiptPayload)
        for item in items {
            let at = item.encodedBytes.startIndex - base
            guard item.identifier == .sequence, case .constructed(let parts) = item.content else {
                throw ReceiptDecodingError(
                    .invalidReceiptPayload,
                    "\(what): attribute at byte \(at) is \(ASN1Reading.name(item.identifier)), not a SEQUENCE", offset: at)
            }
            var iterator = parts.makeIterator()
            guard let typeNode = iterator.next(), let type = ASN1Reading.integer(typeNode),
                let versionNode = iterator.next(), let version = ASN1Reading.integer(versionNode),
                let valueNode = iterator.next(), let value = ASN1Reading.octets(valueNode)
            else {
                throw ReceiptDecodingError(
                    .invalidReceiptPayload,
                    "\(what): attribute at byte \(at) is not SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }",
                    offset: at)
            }
            try body(&self, (Int(clamping: type), Int(clamping: version), at), value)
        }
    }

    private mutating func apply(
        _ attribute: (type: Int, version: Int, offset: Int), value: ArraySlice<UInt8>, to receipt: inout AppReceipt
    ) throws {
        var raw: ASN1Attribute { ASN1Attribute(type: attribute.type, version: attribute.version, bytes: value) }
        let context = FieldPlace(type: attribute.type, purchase: nil)
        var ok = true
        switch attribute.type {
        case 0: ok = string(value, context).map { receipt.receiptType = $0 } != nil
        case 1: ok = integer(value, context).map { receipt.appItemID = $0 } != nil
        case 2:
            ok = string(value, context).map { receipt.bundleID = $0 } != nil
            receipt.bundleIDData = Array(value)
        case 3: ok = string(value, context).map { receipt.applicationVersion = $0 } != nil
        case 4: receipt.opaqueValue = Array(value)
        case 5: receipt.sha1Hash = Array(value)
        case 8: ok = date(value, context, into: &receipt.transactionDate)
        case 9: ok = stringOrInteger(value, context).map { receipt.fulfillmentToolVersion = $0 } != nil
        case 10: ok = string(value, context).map { receipt.ageRating = $0 } != nil
        case 11: ok = integer(value, context).map { receipt.developerID = $0 } != nil
        case 12: ok = date(value, context, into: &receipt.receiptCreationDate)
        case 15: ok = integer(value, context).map { receipt.downloadID = $0 } != nil
        case 16: ok = integer(value, context).map { receipt.versionExternalIdentifier = $0 } != nil
        case 17:
            guard receipt.inApp.count < limits.maximumPurchases else {
                throw ReceiptDecodingError(
                    .limitExceeded, "receipt has more than \(limits.maximumPurchases) in-app purchases", offset: attribute.offset)
            }
            receipt.inApp.append(try purchase(value, index: receipt.inApp.count))
        case 18: ok = date(value, context, into: &receipt.originalPurchaseDate)
        case 19: ok = string(value, context).map { receipt.originalApplicationVersion = $0 } != nil
        case 21: ok = date(value, context, into: &receipt.expirationDate)
        default: receipt.unknownAttributes.append(raw)
        }
        if !ok { receipt.unknownAttributes.append(raw) }
    }

    private mutating func purchase(_ bytes: ArraySlice<UInt8>, index: Int) throws -> Purchase {
        var purchase = Purchase(source: .receiptInApp)
        do {
            try forEachAttribute(in: bytes, what: "in-app purchase \(index)") { decoder, attribute, value in
                decoder.apply(attribute, value: value, to: &purchase, index: index)
            }
        } catch let error as ReceiptDecodingError {
            // Keep the offset meaningful: it was relative to the in-app SET.
            throw ReceiptDecodingError(error.code, error.reason, offset: nil)
        }
        return purchase
    }

    private mutating func apply(
        _ attribute: (type: Int, version: Int, offset: Int), value: ArraySlice<UInt8>, to purchase: inout Purchase,
        index: Int
    ) {
        let context = FieldPlace(type: attribute.type, purchase: index)
        let slot = (1700..<1800).contains(attribute.type) ? Self.purchaseSlots[attribute.type - 1700] : .unknown
        /// Stores a decoded value in the purchase's stored property at the slot's offset.
        @inline(__always) func store<T>(_ value: T?) -> Bool {
            guard let value else { return false }
            withUnsafeMutablePointer(to: &purchase) {
                UnsafeMutableRawPointer($0).advanced(by: slot.offset).assumingMemoryBound(to: T?.self).pointee = value
            }
            return true
        }
        let ok: Bool
        switch slot.kind {
        case .unknown: ok = false
        case .text:
            switch slot.shape {
            case .natural: ok = store(string(value, context))
            case .stringOrInteger: ok = store(stringOrInteger(value, context))
            case .integerText: ok = store(integer(value, context).map { String($0) })
            }
        case .integer: ok = store(integer(value, context).map { Int(clamping: $0) })
        case .integer64: ok = store(integer(value, context))
        case .flag: ok = store(integer(value, context).map { $0 != 0 })
        case .date:
            var date: Date?
            ok = self.date(value, context, into: &date)
            if let date { _ = store(date) }
        case .productType:
            ok = integer(value, context).map { purchase.setProductType(receiptField: Int64(clamping: $0)) } != nil
        }
        if !ok {
            // Room for a real receipt's usual seven or so at once, where appending grew the
            // list three times (a seventh of decoding's allocations).
            if purchase.unknownAttributes.capacity == 0 { purchase.unknownAttributes.reserveCapacity(8) }
            purchase.unknownAttributes.append(ASN1Attribute(type: attribute.type, version: attribute.version, bytes: value))
        }
    }

    /// Where an in-app attribute type goes in ``Purchase``: plain values read from
    /// ``PurchaseField``'s table once, so decoding a field costs no key path or reference
    /// counting (key path writes were a third of decoding a receipt).
    private struct PurchaseSlot {
        enum Kind { case unknown, text, integer, integer64, flag, date, productType }
        var kind: Kind
        var shape: PurchaseField.ASN1Shape
        var offset: Int

        static let unknown = PurchaseSlot(kind: .unknown, shape: .natural, offset: 0)
    }

    /// Types 1700…1799.
    private static let purchaseSlots: [PurchaseSlot] = (1700..<1800).map { type in
        guard let field = PurchaseField.forASN1Type(type) else { return .unknown }
        let kind: PurchaseSlot.Kind
        switch field.accessor {
        case .source, .json, .commitment: return .unknown
        case .productType: return PurchaseSlot(kind: .productType, shape: field.asn1Shape, offset: 0)
        case .text: kind = .text
        case .integer: kind = .integer
        case .integer64: kind = .integer64
        case .flag: kind = .flag
        case .date: kind = .date
        }
        guard let offset = field.offset else { return .unknown }
        return PurchaseSlot(kind: kind, shape: field.asn1Shape, offset: offset)
    }

    /// Names the attribute a warning is about (built only when there is a warning).
    private struct FieldPlace: CustomStringConvertible {
        var type: Int
        /// The in-app purchase's index, or `nil` for a receipt field.
        var purchase: Int?

        var description: String {
            if let purchase { return "in-app purchase \(purchase) field \(type)" }
            return "receipt field \(type)"
        }
    }

    // MARK: - Values

    /// Reads the single primitive TLV inside an attribute value.
    private func primitive(_ bytes: ArraySlice<UInt8>) -> (tag: UInt8, content: ArraySlice<UInt8>)? {
        if fastPath, let (tag, range) = DERAttributeScanner.primitive(bytes) {
            return (tag, bytes[range])
        }
        return Self.berPrimitive(bytes)
    }

    /// ``primitive(_:)`` through swift-asn1's BER parser. Apart and never inlined: inlined, the
    /// parser's optional node was destroyed through its value witnesses on the fast path too,
    /// for every field (2% of inspecting a folder).
    @inline(never)
    private static func berPrimitive(_ bytes: ArraySlice<UInt8>) -> (tag: UInt8, content: ArraySlice<UInt8>)? {
        guard let node = try? BER.parse(bytes), case .primitive(let content) = node.content,
            node.identifier.tagClass == .universal
        else { return nil }
        return (UInt8(truncatingIfNeeded: node.identifier.tagNumber), content)
    }

    private mutating func string(_ bytes: ArraySlice<UInt8>, _ context: FieldPlace) -> String? {
        guard let (tag, content) = primitive(bytes) else {
            warnings.append("\(context) is not a single ASN.1 value; kept as raw bytes")
            return nil
        }
        switch tag {
        case 0x0C, 0x16, 0x13, 0x1A, 0x14:  // UTF8String, IA5String, PrintableString, VisibleString, T61String
            // ASCII (nearly every field) through String(decoding:), which is specialised:
            // String(validating:) looks its generic metadata up at run time on every call
            // (1.5% of inspecting a folder), and is kept for the text it must check.
            guard
                let text = content.withUnsafeBufferPointer({ buffer in
                    var bits: UInt8 = 0
                    for byte in buffer { bits |= byte }
                    return bits < 0x80 ? String(decoding: buffer, as: UTF8.self) : String(validating: buffer, as: UTF8.self)
                })
            else {
                warnings.append("\(context) is not valid UTF-8; invalid bytes shown as U+FFFD")
                return String(decoding: content, as: UTF8.self)
            }
            return text
        default:
            warnings.append("\(context) should be a string but has ASN.1 tag \(tag); kept as raw bytes")
            return nil
        }
    }

    private mutating func integer(_ bytes: ArraySlice<UInt8>, _ context: FieldPlace) -> Int64? {
        guard let (tag, content) = primitive(bytes), tag == 0x02, let value = ASN1Reading.integer(contentBytes: content)
        else {
            warnings.append("\(context) should be an INTEGER; kept as raw bytes")
            return nil
        }
        return value
    }

    private mutating func stringOrInteger(_ bytes: ArraySlice<UInt8>, _ context: FieldPlace) -> String? {
        if let (tag, content) = primitive(bytes), tag == 0x02, let value = ASN1Reading.integer(contentBytes: content) {
            return String(value)
        }
        return string(bytes, context)
    }

    /// Reads a date field; an empty string means "no date" (Apple writes that for, e.g., an
    /// absent expiry) and is not an error.
    private mutating func date(_ bytes: ArraySlice<UInt8>, _ context: FieldPlace, into target: inout Date?) -> Bool {
        if fastPath, let (tag, content) = primitive(bytes), tag == 0x16 || tag == 0x0C {
            if content.isEmpty { return true }
            if let date = AppleDate.parse(bytes: content) {
                target = date
                return true
            }
        }
        guard let text = string(bytes, context) else { return false }
        if text.isEmpty { return true }
        if let date = AppleDate.parse(text) {
            target = date
            return true
        }
        warnings.append("\(context) is not a date: \(text.debugDescription)")
        return false
    }
}
