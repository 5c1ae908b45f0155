import Foundation

/// Recognises and decodes any receipt-shaped input a person can paste or load.
///
/// Formats are sniffed from the bytes, never from a file name:
/// binary PKCS#7 (DER or BER), base64 of a PKCS#7 receipt or of an iOS 6 transaction receipt,
/// an OpenStep plist, verifyReceipt response and V1 notification JSON, JSON wrappers such as
/// `{"receipt-data": "…"}` or `{"signedPayload": "…"}`, StoreKit 2 JWS, and any of these
/// inside quotes or on a log line.
///
/// ```swift
/// let decoded = try ReceiptDecoder().decode(bytes)
/// print(decoded.format, decoded.receipt?.bundleID ?? "-")
/// ```
public struct ReceiptDecoder: Sendable {
    public var limits: DecodingLimits
    /// `false` reads PKCS#7 receipts with swift-asn1 only (tests compare both paths).
    var fastPaths = true

    public init(limits: DecodingLimits = .default) {
        self.limits = limits
    }

    /// Decodes one input.
    ///
    /// - Parameter bytes: the whole input as read from a file, stdin or a paste.
    /// - Returns: the decoded input with its format.
    /// - Throws: ``ReceiptDecodingError`` saying what is wrong and where.
    public func decode(_ bytes: some Collection<UInt8>) throws -> DecodedInput {
        guard bytes.count <= limits.maximumInputBytes else {
            throw ReceiptDecodingError(
                .inputTooLarge,
                "input is \(bytes.count) bytes; the limit is \(limits.maximumInputBytes) bytes")
        }
        return try decode(Array(bytes)[...], depth: 0, wrapping: [])
    }

    /// ``decode(_:)`` as a `Result`, for callers that collect failures rather than stop.
    public func result(_ bytes: some Collection<UInt8>) -> Result<DecodedInput, ReceiptDecodingError> {
        Result { try decode(bytes) }.mapError { $0 as? ReceiptDecodingError ?? ReceiptDecodingError(.unrecognisedFormat, "\($0)") }
    }

    /// Decodes text (a paste).
    public func decode(text: String) throws -> DecodedInput {
        try decode(Array(text.utf8))
    }

    // MARK: - Sniffing

    private func decode(_ input: ArraySlice<UInt8>, depth: Int, wrapping: [String]) throws -> DecodedInput {
        guard depth <= limits.maximumEmbeddingDepth + 2 else {
            throw ReceiptDecodingError(.limitExceeded, "input is wrapped more than \(limits.maximumEmbeddingDepth + 2) times")
        }
        var bytes = input
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        if let first = bytes.first, first == 0x30 {
            return try decodePKCS7(Array(bytes), wrapping: wrapping + ["binary"])
        }
        let text = trimmed(bytes)
        guard let first = text.first else {
            throw ReceiptDecodingError(.emptyInput, "input is empty")
        }
        switch first {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            return try decodeBraced(text, depth: depth, wrapping: wrapping)
        case UInt8(ascii: "\""), UInt8(ascii: "'"):
            if text.count >= 2, text.last == first {
                return try decode(text.dropFirst().dropLast(), depth: depth + 1, wrapping: wrapping + ["quoted"])
            }
        default:
            break
        }
        if JWSToken.mightBeJWS(text) {
            // Decoded first and sniffed only when that leaves it open: a token whose segments
            // decoded strictly is a JWS by the sniff's own rule, which then need not read all
            // of its characters once more. What is and is not taken as a JWS, and every error,
            // stay the sniff's.
            let token: JWSToken?
            do {
                token = try JWSToken(compact: text, maximumDepth: limits.maximumNestingDepth)
            } catch {
                if JWSToken.looksLikeJWS(text) { throw error }
                token = nil
            }
            if let token, token.isStrictText || JWSToken.looksLikeJWS(text) {
                return try decodeJWS(token, depth: 0, wrapping: wrapping)
            }
        }
        do {
            let decoded = try Base64Text.decode(text)
            return try decodeBase64Payload(decoded, wrapping: wrapping + ["base64"])
        } catch let strict as ReceiptDecodingError where strict.code == .invalidBase64 {
            // Maybe a log line: look for a receipt-looking token inside it.
            if let found = try? decodeEmbedded(text, depth: depth, wrapping: wrapping) { return found }
            if looksBinary(text) {
                throw ReceiptDecodingError(
                    .unrecognisedFormat,
                    "input is binary but not a PKCS#7 receipt (first byte \(String(format: "0x%02X", text.first!)), expected 0x30)",
                    offset: 0)
            }
            throw strict
        }
    }

    /// `{…}` is JSON, or an OpenStep plist (an iOS 6 receipt whose base64 was already undone).
    private func decodeBraced(_ text: ArraySlice<UInt8>, depth: Int, wrapping: [String]) throws -> DecodedInput {
        let json: JSONValue
        do {
            json = try JSONValue.parse(text, maximumDepth: limits.maximumNestingDepth)
        } catch let jsonError as ReceiptDecodingError {
            if jsonError.code == .invalidJSON, let plist = try? OpenStepPlist.parse(text, maximumDepth: limits.maximumNestingDepth),
                plist["purchase-info"] != nil
            {
                return try decodeLegacy(plist: plist, source: Array(text), wrapping: wrapping + ["plist"])
            }
            if jsonError.code == .invalidJSON, text.first == UInt8(ascii: "{"), containsPlistAssignment(text) {
                // Report the plist problem: that is what the input is trying to be.
                _ = try OpenStepPlist.parse(text, maximumDepth: limits.maximumNestingDepth)
            }
            throw jsonError
        }
        return try decodeJSON(json, depth: depth, wrapping: wrapping)
    }

    private func decodeJSON(_ json: JSONValue, depth: Int, wrapping: [String]) throws -> DecodedInput {
        switch json {
        case .string(let s):
            return try decode(Array(s.utf8)[...], depth: depth + 1, wrapping: wrapping + ["json-string"])
        case .object(let object):
            for key in ["receipt-data", "receipt_data", "receiptData", "signedPayload", "signedTransactionInfo",
                "signedRenewalInfo", "signedAppTransactionInfo", "transactionReceipt", "receipt"]
            {
                guard case .string(let inner) = object[key] else { continue }
                if key == "receipt", VerifyResponseDecoder.isResponse(object) { break }
                return try decode(Array(inner.utf8)[...], depth: depth + 1, wrapping: wrapping + ["json:\(key)"])
            }
            if VerifyResponseDecoder.isNotificationV1(object) {
                var result = try VerifyResponseDecoder.decodeNotificationV1(object, limits: limits)
                result.wrapping = wrapping
                return result
            }
            if VerifyResponseDecoder.isResponse(object) {
                var result = try VerifyResponseDecoder.decodeResponse(object, limits: limits)
                result.wrapping = wrapping
                return result
            }
            if object["notificationType"] != nil || object["transactionId"] != nil || object["autoRenewProductId"] != nil
                || object["receiptType"] != nil
            {
                // An already-decoded JWS payload pasted on its own.
                var result = try decodeJWSPayload(json, token: nil, depth: 0)
                result.wrapping = wrapping + ["jws-payload"]
                return result
            }
            let keys = object.keys.sorted().prefix(6).joined(separator: ", ")
            throw ReceiptDecodingError(
                .unrecognisedFormat,
                "JSON object with keys \(keys) is not a receipt, a verifyReceipt response or a notification")
        case .array(let items) where items.count == 1:
            return try decodeJSON(items[0], depth: depth + 1, wrapping: wrapping + ["json-array"])
        default:
            throw ReceiptDecodingError(.unrecognisedFormat, "JSON value is not an object with a receipt in it")
        }
    }

    /// Base64 decoded to bytes: a PKCS#7 receipt, or the OpenStep plist of an iOS 6 receipt.
    private func decodeBase64Payload(_ bytes: [UInt8], wrapping: [String]) throws -> DecodedInput {
        if bytes.first == 0x30 {
            return try decodePKCS7(bytes, wrapping: wrapping)
        }
        let text = trimmed(bytes[...])
        if text.first == UInt8(ascii: "{") {
            let plist = try OpenStepPlist.parse(text, maximumDepth: limits.maximumNestingDepth)
            return try decodeLegacy(plist: plist, source: bytes, wrapping: wrapping + ["plist"])
        }
        let first = bytes.first.map { String(format: "0x%02X", $0) } ?? "nothing"
        throw ReceiptDecodingError(
            .unrecognisedFormat,
            "base64 decoded to \(bytes.count) bytes that are neither a PKCS#7 receipt (starts with 0x30) nor a transaction receipt plist (starts with '{'); the first byte is \(first)")
    }

    /// Finds a JSON object, JWS or long base64 token inside a log line.
    private func decodeEmbedded(_ text: ArraySlice<UInt8>, depth: Int, wrapping: [String]) throws -> DecodedInput? {
        if let open = text.firstIndex(of: UInt8(ascii: "{")), let close = text.lastIndex(of: UInt8(ascii: "}")), open < close {
            if let found = try? decodeBraced(text[open...close], depth: depth + 1, wrapping: wrapping + ["embedded"]) {
                return found
            }
        }
        // The longest run of base64/base64url characters (dots allowed, for JWS), with '='
        // only as trailing padding, so `receipt=MII…` yields the receipt, not the key.
        var best: Range<Int>?
        var i = text.startIndex
        while i < text.endIndex {
            guard isTokenCharacter(text[i]) else {
                i += 1
                continue
            }
            let start = i
            while i < text.endIndex, isTokenCharacter(text[i]) { i += 1 }
            var end = i
            while end < text.endIndex, end - i < 2, text[end] == UInt8(ascii: "=") { end += 1 }
            if best == nil || end - start > best!.count { best = start..<end }
        }
        guard let run = best, run.count >= 64 else { return nil }
        let token = text[run]
        if JWSToken.looksLikeJWS(token) {
            return try decodeJWS(token, depth: 0, wrapping: wrapping + ["embedded"])
        }
        guard !token.contains(UInt8(ascii: ".")) else { return nil }
        return try decodeBase64Payload(try Base64Text.decode(token), wrapping: wrapping + ["embedded", "base64"])
    }

    // MARK: - Formats

    private func decodePKCS7(_ bytes: [UInt8], wrapping: [String]) throws -> DecodedInput {
        let signedData = try PKCS7SignedData(berEncoded: bytes, fastPath: fastPaths)
        guard signedData.contentTypeOID == PKCS7SignedData.dataOID else {
            throw ReceiptDecodingError(
                .invalidPKCS7, "signed content type is \(signedData.contentTypeOID), not data (\(PKCS7SignedData.dataOID))")
        }
        var payloadDecoder = ReceiptPayloadDecoder(limits: limits, fastPath: fastPaths)
        let receipt: AppReceipt
        do {
            receipt = try payloadDecoder.decode(signedData.content)
        } catch let error as ReceiptDecodingError {
            throw error.prefixed("in the signed receipt payload (\(signedData.content.count) bytes)")
        }
        var result = DecodedInput(format: .pkcs7)
        result.wrapping = wrapping
        result.receipt = receipt
        result.rawEnvironment = receipt.receiptType
        result.environment = receipt.receiptType.flatMap(StoreEnvironment.init(appleValue:))
        result.signature = .pkcs7(signedData)
        result.receiptBytes = bytes
        result.warnings = payloadDecoder.warnings
        return result
    }

    private func decodeLegacy(plist: OpenStepPlist, source: [UInt8], wrapping: [String]) throws -> DecodedInput {
        guard case .dictionary(let entries) = plist else {
            throw ReceiptDecodingError(.invalidLegacyReceipt, "transaction receipt is not a plist dictionary")
        }
        guard let info = plist["purchase-info"] else {
            let keys = entries.map(\.key).prefix(6).joined(separator: ", ")
            throw ReceiptDecodingError(.invalidLegacyReceipt, "transaction receipt has no purchase-info (keys: \(keys))")
        }
        let infoBytes: [UInt8]
        switch info {
        case .string(let b64):
            do {
                infoBytes = try Base64Text.decode(Array(b64.utf8), what: "purchase-info")
            } catch let error as ReceiptDecodingError {
                throw ReceiptDecodingError(.invalidLegacyReceipt, error.reason, offset: error.offset)
            }
        case .data(let d): infoBytes = d
        default: throw ReceiptDecodingError(.invalidLegacyReceipt, "purchase-info is not base64 text")
        }
        let purchaseInfo: OpenStepPlist
        do {
            purchaseInfo = try OpenStepPlist.parse(infoBytes, maximumDepth: limits.maximumNestingDepth)
        } catch let error as ReceiptDecodingError {
            throw error.prefixed("in purchase-info")
        }
        guard case .dictionary(let fields) = purchaseInfo else {
            throw ReceiptDecodingError(.invalidLegacyReceipt, "purchase-info is not a plist dictionary")
        }
        var object: [String: JSONValue] = [:]
        for (key, value) in fields {
            guard case .string(let s) = value else { continue }
            object[key.replacingOccurrences(of: "-", with: "_")] = .string(s)
        }
        var result = DecodedInput(format: .legacy)
        result.wrapping = wrapping
        result.receiptBytes = source
        result.transactions = [Purchase(snakeCase: object, source: .purchaseInfo)]
        if let env = plist["environment"]?.string {
            result.rawEnvironment = env
            result.environment = StoreEnvironment(appleValue: env)
        } else {
            // Apple leaves `environment` out of production transaction receipts.
            result.environment = .production
        }
        for (key, value) in entries where key != "purchase-info" && key != "signature" {
            if case .string(let s) = value { result.legacyEnvelope.append(Field(name: key, value: s)) }
        }
        if let signature = plist["signature"] {
            switch signature {
            case .string(let b64):
                do {
                    let blob = try Base64Text.decode(Array(b64.utf8), what: "signature")
                    result.signature = .legacy(signatureBlob: blob, purchaseInfo: infoBytes)
                } catch let error as ReceiptDecodingError {
                    result.warnings.append("signature: \(error.reason)")
                }
            case .data(let blob):
                result.signature = .legacy(signatureBlob: blob, purchaseInfo: infoBytes)
            default:
                result.warnings.append("signature is neither base64 text nor data")
            }
        } else {
            result.warnings.append("transaction receipt has no signature")
        }
        return result
    }

    private func decodeJWS(_ text: ArraySlice<UInt8>, depth: Int, wrapping: [String]) throws -> DecodedInput {
        try decodeJWS(try JWSToken(compact: text, maximumDepth: limits.maximumNestingDepth), depth: depth, wrapping: wrapping)
    }

    private func decodeJWS(_ token: JWSToken, depth: Int, wrapping: [String]) throws -> DecodedInput {
        var result = try decodeJWSPayload(token.payload, token: token, depth: depth)
        result.wrapping = wrapping
        return result
    }

    /// Keys only a Retention Messaging realtime request has.
    private static let realtimeKeys = ["requestIdentifier", "userLocale"]
    /// Keys only an AppTransaction has, and keys only renewal info has (made once, not per token).
    private static let appTransactionKeys = ["receiptType", "applicationVersion", "originalApplicationVersion", "deviceVerification"]
    private static let renewalKeys = [
        "autoRenewProductId", "autoRenewStatus", "expirationIntent", "renewalDate", "recentSubscriptionStartDate",
        "renewalPrice", "gracePeriodExpiresDate", "isInBillingRetryPeriod", "priceIncreaseStatus",
    ]

    private func decodeJWSPayload(_ payload: JSONValue, token: JWSToken?, depth: Int) throws -> DecodedInput {
        guard case .object(let object) = payload else {
            throw ReceiptDecodingError(.invalidJWS, "JWS payload is not a JSON object")
        }
        var result: DecodedInput
        let appTransactionKeys = Self.appTransactionKeys
        // Asked at most once, and only of a payload that is not a notification or transaction.
        lazy var hasRenewalKey = Self.renewalKeys.contains(where: { object[$0] != nil })
        if object["notificationType"] != nil {
            result = DecodedInput(format: .jwsNotification)
            try fillNotificationV2(&result, object, depth: depth)
        } else if object["transactionId"] != nil || object["purchaseDate"] != nil
            || (object["bundleId"] != nil && !appTransactionKeys.contains(where: { object[$0] != nil }))
        {
            result = DecodedInput(format: .jwsTransaction)
            let purchase = Purchase(jwsTransaction: object)
            result.transactions = [purchase]
            result.rawEnvironment = purchase.environment
        } else if hasRenewalKey {
            result = DecodedInput(format: .jwsRenewal)
            let renewal = RenewalInfo(jwsRenewal: object)
            result.pendingRenewalInfo = [renewal]
            result.rawEnvironment = renewal.environment
        } else if Self.realtimeKeys.contains(where: { object[$0] != nil }) {
            // The Retention Messaging API's realtime request: a kind of its own (it has no
            // renewal fields, and an appAppleId that is not an AppTransaction's).
            result = DecodedInput(format: .realtimeRequest)
            let request = RealtimeRequest(apple: object)
            result.realtimeRequest = request
            result.rawEnvironment = request.environment
        } else if appTransactionKeys.contains(where: { object[$0] != nil }) || object["appAppleId"] != nil {
            result = DecodedInput(format: .jwsAppTransaction)
            let receipt = AppReceipt(appTransaction: object)
            result.receipt = receipt
            result.rawEnvironment = receipt.receiptType
        } else {
            // No kind fits: kept as sent, never read as the nearest kind.
            result = DecodedInput(format: .unknown)
            var reader = JSONFieldReader(object)
            result.payloadFields = reader.remainingFields()
            result.rawEnvironment = object["environment"]?.text
            let keys = object.keys.sorted().prefix(6).joined(separator: ", ")
            result.warnings.append(
                "the payload (keys \(keys)) is not a transaction, renewal info, AppTransaction, notification or realtime request: its fields are shown as sent")
        }
        if result.environment == nil {
            result.environment = result.rawEnvironment.flatMap(StoreEnvironment.init(appleValue:))
        }
        if let token { result.signature = .jws(token) }
        return result
    }

    /// The objects a V2 notification's payload carries its content in (one of them).
    private static let notificationContainers = ["data", "summary", "externalPurchaseToken", "appData"]
    /// The fields of a notification's container that hold tokens of their own.
    private static let nestedTokenKeys = ["signedTransactionInfo", "signedRenewalInfo", "signedAppTransactionInfo"]
    /// `data.signedTransactionInfo` and the rest, made once (one string a token otherwise).
    private static let nestedTokenFields = notificationContainers.map { name in nestedTokenKeys.map { "\(name).\($0)" } }

    private func fillNotificationV2(_ result: inout DecodedInput, _ object: [String: JSONValue], depth: Int) throws {
        var r = JSONFieldReader(object)
        var info = NotificationInfo()
        info.notificationType = r.string("notificationType")
        info.subtype = r.string("subtype")
        info.notificationUUID = r.string("notificationUUID")
        info.version = r.string("version")
        info.signedDate = r.epochMillisecondsDate("signedDate")
        // Apple sends one of these (never more than one); the first present is read.
        let containers = Self.notificationContainers
        let found = containers.indices.lazy.compactMap { index in r.value(containers[index])?.object.map { (index, $0) } }.first
        if let (containerIndex, data) = found {
            let name = containers[containerIndex]
            info.container = name
            var d = JSONFieldReader(data)
            if let env = d.string("environment") {
                result.rawEnvironment = env
                result.environment = StoreEnvironment(appleValue: env)
            }
            info.appAppleID = d.int("appAppleId")
            info.bundleID = d.string("bundleId")
            info.bundleVersion = d.string("bundleVersion")
            info.subscriptionStatus = d.int("status").map { Int(clamping: $0) }
            info.consumptionRequestReason = d.string("consumptionRequestReason")
            if name == "summary" {
                var summary = RenewalExtensionSummary()
                summary.requestIdentifier = d.string("requestIdentifier")
                summary.productID = d.string("productId")
                if case .array(let codes)? = d.value("storefrontCountryCodes") { summary.storefrontCountryCodes = codes.compactMap(\.text) }
                summary.succeededCount = d.int("succeededCount")
                summary.failedCount = d.int("failedCount")
                info.extensionSummary = summary
            }
            if name == "externalPurchaseToken" {
                info.externalPurchaseID = d.string("externalPurchaseId")
                info.tokenType = d.string("tokenType")
                info.tokenCreationDate = d.epochMillisecondsDate("tokenCreationDate")
                info.tokenExpirationDate = d.epochMillisecondsDate("tokenExpirationDate")
                // Apple's libraries derive what the token does not say: Sandbox when its id
                // starts with SANDBOX_, Production otherwise.
                if result.rawEnvironment == nil, let id = info.externalPurchaseID {
                    let derived = id.hasPrefix("SANDBOX_") ? "Sandbox" : "Production"
                    result.rawEnvironment = derived
                    result.environment = StoreEnvironment(appleValue: derived)
                }
            }
            var notTokens: [Field] = []
            for (keyIndex, key) in Self.nestedTokenKeys.enumerated() {
                guard let jws = d.string(key) else { continue }
                let field = Self.nestedTokenFields[containerIndex][keyIndex]
                guard depth < limits.maximumEmbeddingDepth else {
                    result.warnings.append("\(field) not decoded: tokens nested more than \(limits.maximumEmbeddingDepth) deep")
                    continue
                }
                do {
                    // Read from the string's bytes straight into the token's own array (one copy).
                    let nested = try decodeJWS(
                        JWSToken(compact: jws.utf8, maximumDepth: limits.maximumNestingDepth), depth: depth + 1, wrapping: [])
                    append(nested.transactions, to: &result.transactions)
                    append(nested.pendingRenewalInfo, to: &result.pendingRenewalInfo)
                    if result.receipt == nil { result.receipt = nested.receipt }
                    // Room for the two a notification usually carries; the input moved, not copied.
                    if result.nested.isEmpty { result.nested.reserveCapacity(2) }
                    result.nested.append(NestedInput(field: field, input: consume nested))
                } catch let error as ReceiptDecodingError {
                    // Kept as sent (a placeholder, a truncated token): shown, never dropped.
                    result.warnings.append("\(field) could not be decoded: \(error.reason); kept as sent")
                    notTokens.append(Field(name: field, value: jws, json: nil))
                }
            }
            info.otherFields = notTokens + d.remainingFields().map { Field(name: "\(name).\($0.name)", value: $0.value, json: $0.json) }
        }
        info.otherFields += r.remainingFields()
        result.notification = info
    }

    // MARK: - Helpers

    /// `more` after `list`; the list itself, shared, when `list` is empty (a notification's
    /// one transaction was copied field by field, every string retained).
    private func append<T>(_ more: [T], to list: inout [T]) {
        if list.isEmpty { list = more } else { list += more }
    }

    private func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var s = bytes
        while let f = s.first, f == 0x20 || f == 0x0A || f == 0x0D || f == 0x09 || f == 0x00 { s = s.dropFirst() }
        while let l = s.last, l == 0x20 || l == 0x0A || l == 0x0D || l == 0x09 || l == 0x00 { s = s.dropLast() }
        return s
    }

    private func looksBinary(_ bytes: ArraySlice<UInt8>) -> Bool {
        let sample = bytes.prefix(64)
        return sample.contains { $0 < 0x09 || ($0 > 0x0D && $0 < 0x20) } || String(validating: sample, as: UTF8.self) == nil
    }

    private func isTokenCharacter(_ b: UInt8) -> Bool {
        b != UInt8(ascii: "=") && (Base64Text.isAlphabet(b) || b == UInt8(ascii: "."))
    }

    private func containsPlistAssignment(_ text: ArraySlice<UInt8>) -> Bool {
        let probe = text.prefix(200)
        return probe.contains(UInt8(ascii: "=")) && probe.contains(UInt8(ascii: ";"))
    }
}
