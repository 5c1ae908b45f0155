import Foundation
import Testing

@testable import ReceiptRendering
@testable import ReceiptCore

// Sweeps the shared receipt corpus (`../shared/corpus` next to the package root) and compares what
// `ReceiptDecoder` produces with the corpus's own ground truth: the MANIFEST.tsv notes and the
// sidecar files (`*.expected.txt`, `*.expected.json`, `*.plist`, `*.purchase-info.plist`,
// `*.decoded.json`). Expected values are always read from the corpus, never from our decoder.
//
// Everything used to read the ground truth (JSON, OpenStep plists, dates, base64) is implemented in
// this file or taken from Foundation, so a bug in ReceiptCore's own readers cannot hide itself.
//
// When the corpus folder is absent the whole suite is skipped.

@Suite("Corpus sweep", .enabled(if: Corpus.isAvailable, "needs ../shared/corpus beside the package (the team's corpus); core tests use the copies in Tests/"))
struct CorpusSweepTests {

    // MARK: - Manifest and corpus layout

    @Test("every corpus file has a manifest row and every row a file")
    func manifestCoversCorpus() {
        #expect(Corpus.malformedManifestLines.isEmpty, "MANIFEST.tsv lines without 6 columns: \(Corpus.malformedManifestLines)")
        var onDisk: [String] = []
        for dir in ["pkcs7", "legacy", "responses", "jws", "certs"] { onDisk += Corpus.list(dir) }
        #expect(onDisk.count > 150, "corpus looks truncated: \(onDisk.count) files")
        for path in onDisk {
            #expect(Corpus.manifest[path] != nil, "\(path) has no MANIFEST.tsv row")
        }
        for path in Corpus.manifest.keys.sorted() {
            #expect(Corpus.exists(path), "MANIFEST.tsv lists \(path) but the file is missing")
        }
    }

    // MARK: - 1. PKCS#7 receipts against the manifest's decoded fields

    @Test("PKCS#7 receipts (.der and .b64) match the manifest", arguments: Corpus.receiptStems)
    func pkcs7Receipt(stem: String) throws {
        let derPath = stem + ".der"
        let b64Path = stem + ".b64"
        let row = try #require(Corpus.manifest[derPath], "\(derPath) has no manifest row")
        #expect(row.kind == "pkcs7")
        let expected = try #require(PKCS7Expectation(notes: row.notes), "\(derPath): manifest notes have no decoded: section")

        let der = try ReceiptDecoder().decode(Corpus.bytes(derPath))
        #expect(der.format == .pkcs7, "\(derPath): format \(der.format)")
        let receipt = try #require(der.receipt, "\(derPath): no receipt")

        var check = FieldCheck(context: derPath)
        check.equal(receipt.receiptType, expected.fields["receipt_type"], "receipt_type")
        check.equal(receipt.bundleID, expected.fields["bundle_id"], "bundle_id")
        check.equal(receipt.applicationVersion, expected.fields["app_version"], "app_version")
        check.equal(receipt.originalApplicationVersion, expected.fields["original_application_version"], "original_application_version")
        for (key, got) in [
            ("creation_date", receipt.receiptCreationDate), ("original_purchase_date", receipt.originalPurchaseDate),
            ("expiration_date", receipt.expirationDate),
        ] {
            let want = try expected.fields[key].map { try GDate.require($0, "\(derPath) manifest \(key)") }
            check.instant(got, want, key)
        }
        check.equal(receipt.inApp.count, expected.inAppCount, "in_app count")
        check.equal(Set(receipt.inApp.compactMap(\.productID)), expected.products, "product ids")
        check.equal(receipt.inApp.filter { $0.productID == nil }.count, 0, "in_app rows without product id")
        // The environment as written (`receipt_type`) and normalised the way Apple documents it.
        check.equal(der.rawEnvironment, expected.fields["receipt_type"], "rawEnvironment")
        check.equal(der.environment, expected.fields["receipt_type"].flatMap(GEnvironment.fromReceiptType), "environment")
        #expect(check.compared >= 12)

        let b64Row = try #require(Corpus.manifest[b64Path], "\(b64Path) has no manifest row")
        #expect(b64Row.kind == "pkcs7-b64")
        #expect(b64Row.notes.contains("base64 of \(derPath)"), "\(b64Path): manifest does not say it is the base64 of \(derPath)")
        let b64 = try ReceiptDecoder().decode(Corpus.bytes(b64Path))
        #expect(b64.format == .pkcs7, "\(b64Path): format \(b64.format)")
        var lhs = der
        var rhs = b64
        lhs.wrapping = []
        rhs.wrapping = []
        #expect(lhs == rhs, "\(b64Path) decodes differently from \(derPath) (beyond wrapping)")
    }

    // MARK: - 2. Negative (truncated / tampered) receipts

    @Test("truncated receipts fail with a located error", arguments: Corpus.negativeFiles)
    func negativeReceipt(path: String) throws {
        let row = try #require(Corpus.manifest[path], "\(path) has no manifest row")
        #expect(row.kind.hasPrefix("pkcs7-negative"), "\(path): kind \(row.kind)")
        let bytes = try Corpus.bytes(path)
        do {
            let decoded = try ReceiptDecoder().decode(bytes)
            Issue.record("\(path) is a broken receipt but decoded as \(decoded.format)")
        } catch let error as ReceiptDecodingError {
            #expect(!error.reason.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(path): empty reason")
            let allowed: [ReceiptDecodingError.Code] = [.invalidASN1, .invalidBase64, .invalidPKCS7]
            #expect(allowed.contains(error.code), "\(path): code \(error.code) (\(error.reason))")
            if row.kind == "pkcs7-negative-b64", row.notes.contains("invalid length") {
                // MANIFEST: "609 = not a multiple of 4, so the .b64 is itself invalid base64".
                #expect(error.code == .invalidBase64, "\(path): the text is not valid base64 but got \(error.code)")
            }
            if path.hasSuffix(".der") {
                let offset = try #require(error.offset, "\(path): no byte offset in \(error)")
                #expect(offset >= 0 && offset <= bytes.count, "\(path): offset \(offset) outside 0...\(bytes.count)")
            }
        } catch {
            Issue.record("\(path): threw \(type(of: error)) instead of ReceiptDecodingError: \(error)")
        }
    }

    // MARK: - 3. Field-by-field sidecars of PKCS#7 receipts

    @Test("PKCS#7 .expected.txt sidecars", arguments: Corpus.list("pkcs7").filter { $0.hasSuffix(".expected.txt") })
    func pkcs7Sidecar(path: String) throws {
        // Each sidecar belongs to the .der of the same stem: the manifest describes them together, and
        // the values were cross-checked against the bytes independently (openssl cms -verify -noverify
        // -binary to extract the payload, then a small Python DER walk over the attribute SET). All
        // sidecars agree with their bytes except one detail, see `webOrderLineItemId` below.
        let stem = String(path.dropLast(".expected.txt".count))
        let decoded = try ReceiptDecoder().decode(Corpus.bytes(stem + ".der"))
        let receipt = try #require(decoded.receipt)
        let lines = try SidecarLine.parse(Corpus.text(path))
        var check = FieldCheck(context: path)
        var unmapped: [String] = []
        for line in lines {
            if !(try Self.compareSidecarLine(line, decoded: decoded, receipt: receipt, check: &check)) {
                unmapped.append("line \(line.number): \(line.key)")
            }
        }
        #expect(unmapped.isEmpty, "\(path): sidecar lines not compared: \(unmapped)")
        // Every assertion line must have been compared, and there must be a real number of them.
        #expect(check.compared == lines.count, "\(path): compared \(check.compared) of \(lines.count) lines")
        #expect(check.compared >= 9, "\(path): only \(check.compared) fields compared")
    }

    /// Compares one `key = value` line of an IdeasOnCanvas or RevenueCat sidecar. Returns false when
    /// the key has no counterpart in our model.
    private static func compareSidecarLine(
        _ line: SidecarLine, decoded: DecodedInput, receipt: AppReceipt, check: inout FieldCheck
    ) throws -> Bool {
        let where_ = "line \(line.number) \(line.key)"
        let v = line.value
        if line.key == "inAppPurchases" {  // RevenueCat: `inAppPurchases = haveCount(9)`
            check.equal(receipt.inApp.count, try v.count(where_), where_)
            return true
        }
        if let (index, field, dialect) = SidecarLine.purchaseKey(line.key) {
            guard index < receipt.inApp.count else {
                // Counted as a compared (and failed) line: the receipt lacks the purchase the sidecar describes.
                check.equal(receipt.inApp.count > index, true, "\(where_): purchase \(index) exists")
                return true
            }
            let p = receipt.inApp[index]
            switch field {
            case "quantity": check.equal(p.quantity.map(Int64.init), try v.int(where_), where_)
            case "productIdentifier", "productId": check.equal(p.productID, try v.string(where_), where_)
            case "transactionIdentifier", "transactionId": check.equal(p.transactionID, try v.string(where_), where_)
            case "originalTransactionIdentifier", "originalTransactionId":
                check.equal(p.originalTransactionID, try v.string(where_), where_)
            case "purchaseDate": check.instant(p.purchaseDate, try v.date(where_), where_)
            case "originalPurchaseDate": check.instant(p.originalPurchaseDate, try v.date(where_), where_)
            case "subscriptionExpirationDate", "expiresDate": check.instant(p.expiresDate, try v.date(where_), where_)
            case "cancellationDate": check.instant(p.cancellationDate, try v.date(where_), where_)
            case "isInTrialPeriod": check.equal(p.isTrialPeriod, try v.bool(where_), where_)
            case "isInIntroOfferPeriod": check.equal(p.isInIntroOfferPeriod, try v.bool(where_), where_)
            case "promotionalOfferIdentifier": check.equal(p.promotionalOfferID, try v.string(where_), where_)
            case "productType": check.equal(p.productType, try v.productType(where_), where_)
            case "webOrderLineItemId":
                let want = try v.int(where_).map(String.init)
                if dialect == .ideasOnCanvas, want == nil {
                    // IdeasOnCanvas writes `nil` where the receipt holds web_order_line_item_id = INTEGER 0
                    // (field 1711 is present with value 0 in ioc_ios_purchasing_experiments_sandbox_2023
                    // in-app 0 and revenuecat_sandboxReceipt2_mbaasy in-app 0: checked with openssl +
                    // a DER walk). RevenueCat's sidecar for the same mbaasy bytes pins the exact value
                    // "0" (`inAppPurchases[0].webOrderLineItemId = 0`), so only here both are accepted.
                    check.equal(p.webOrderLineItemID == nil || p.webOrderLineItemID == "0", true, "\(where_) (nil or 0)")
                } else {
                    check.equal(p.webOrderLineItemID, want, where_)
                }
            default: return false
            }
            return true
        }
        guard line.key.hasPrefix("receipt.") else { return false }
        let field = String(line.key.dropFirst("receipt.".count))
        switch field {
        case "bundleIdentifier", "bundleId": check.equal(receipt.bundleID, try v.string(where_), where_)
        case "bundleIdData": check.equal(receipt.bundleIDData, try v.data(where_), where_)
        case "appVersion", "applicationVersion": check.equal(receipt.applicationVersion, try v.string(where_), where_)
        case "opaqueValue": check.equal(receipt.opaqueValue, try v.data(where_), where_)
        case "sha1Hash": check.equal(receipt.sha1Hash, try v.data(where_), where_)
        case "originalAppVersion", "originalApplicationVersion":
            check.equal(receipt.originalApplicationVersion, try v.string(where_), where_)
        case "receiptCreationDate", "creationDate": check.instant(receipt.receiptCreationDate, try v.date(where_), where_)
        case "expirationDate": check.instant(receipt.expirationDate, try v.date(where_), where_)
        case "inAppPurchaseReceipts.count", "inAppPurchases.count": check.equal(receipt.inApp.count, try v.count(where_), where_)
        case "environment": check.equal(decoded.environment, try v.environment(where_), where_)
        default: return false
        }
        return true
    }

    @Test("mbaasy .expected.json belongs to another revision of the receipt")
    func mbaasyExpectedJSON() throws {
        // The manifest says the mbaasy/itunes_receipt_decoder example (spec/examples/unified_sandbox.txt)
        // is identical to this .der and that the decoded receipt "must include" unified_sandbox.json.
        // It does not: the .der's payload (openssl cms -verify -noverify -inform DER -binary, then a DER
        // walk; also what both .expected.txt dialects and the manifest's own decoded: section say) has
        // receipt_creation_date 2015-08-13T07:50:46Z and 7 in-app rows (1 "consumable" + 6 "monthly",
        // transaction ids 1000000166865231…1000000166967782), while the .json describes a receipt created
        // 2015-11-18T17:13:48Z whose 5 rows (free_subscription, non_renewing_subscription, yearly;
        // transaction ids 10000001806…/10000001808…) appear in no PKCS#7 file of the corpus (the yearly
        // row 1000000180703127 only survives as legacy/mbaasy_remote_latest_receipt_legacy). So the .json
        // was written for a different revision of unified_sandbox.txt. The .expected.txt is the ground
        // truth for these bytes; the .json still gives the fields both revisions share.
        let path = "pkcs7/revenuecat_sandboxReceipt2_mbaasy.expected.json"
        let json = try GJSON.parse(Corpus.bytes(path))
        let decoded = try ReceiptDecoder().decode(Corpus.bytes("pkcs7/revenuecat_sandboxReceipt2_mbaasy.der"))
        let receipt = try #require(decoded.receipt)
        var check = FieldCheck(context: path)
        check.equal(receipt.bundleID, json["bundle_id"]?.string, "bundle_id")
        check.equal(receipt.applicationVersion, json["application_version"]?.string, "application_version")
        check.equal(receipt.originalApplicationVersion, json["original_application_version"]?.string, "original_application_version")
        check.equal(receipt.receiptType, json["environment"]?.string, "environment (receipt_type)")
        #expect(check.compared == 4)

        let jsonCreation = try GDate.require(json["creation_date"]?.string ?? "", "\(path) creation_date")
        let jsonIDs = Set((json["in_app"]?.array ?? []).compactMap { $0["transaction_id"]?.string })
        #expect(jsonIDs.count == 5)
        withKnownIssue("expected.json describes another revision of unified_sandbox.txt (see comment)") {
            #expect(receipt.receiptCreationDate == jsonCreation)
            #expect(Set(receipt.inApp.compactMap(\.transactionID)).isSuperset(of: jsonIDs))
        }
    }

    // MARK: - 4. iOS 6 transaction receipts

    @Test("iOS 6 transaction receipts match their plist sidecars", arguments: Corpus.list("legacy").filter { $0.hasSuffix(".b64") })
    func legacyReceipt(path: String) throws {
        let stem = String(path.dropLast(".b64".count))
        let row = try #require(Corpus.manifest[path], "\(path) has no manifest row")
        #expect(row.kind == "legacy")
        let decoded = try ReceiptDecoder().decode(Corpus.bytes(path))
        #expect(decoded.format == .legacy, "\(path): format \(decoded.format)")
        try #require(decoded.transactions.count == 1, "\(path): \(decoded.transactions.count) transactions")
        let purchase = decoded.transactions[0]
        var check = FieldCheck(context: path)
        var floor = 0

        if Corpus.exists(stem + ".purchase-info.plist") {
            let info = try GPlist.parse(Corpus.text(stem + ".purchase-info.plist"))
            let snake = info.reduce(into: [String: GJSON]()) { $0[$1.key.replacingOccurrences(of: "-", with: "_")] = .string($1.value) }
            SnakeRow.compare(snake, purchase, crossCheckDateStrings: true, context: "purchase-info", check: &check)
            floor += 10
        }
        if Corpus.exists(stem + ".plist") {
            let outer = try GPlist.parse(Corpus.text(stem + ".plist"))
            check.equal(decoded.rawEnvironment, outer["environment"], "environment (raw)")
            if let env = outer["environment"] {
                check.equal(decoded.environment, GEnvironment.fromAppleValue(env), "environment")
            } else {
                // Apple leaves `environment` out of production transaction receipts (README: the EDITED_
                // production receipt is the sandbox one with that key deleted; its source asserts
                // `environment == :production`).
                check.equal(decoded.environment, .production, "environment (absent key means production)")
            }
            for (key, value) in outer where key != "purchase-info" && key != "signature" {
                check.equal(decoded.legacyEnvelope.first { $0.name == key }?.value, value, "envelope \(key)")
            }
            let infoBytes = try GBase64.decode(outer["purchase-info"] ?? "", "\(stem).plist purchase-info")
            if let signature = outer["signature"] {
                let blob = try GBase64.decode(signature, "\(stem).plist signature")
                check.equal(decoded.signature, .legacy(signatureBlob: blob, purchaseInfo: infoBytes), "signature material")
            } else {
                check.equal(decoded.signature, nil, "signature material")
            }
            floor += 3
        }
        if Corpus.exists(stem + ".expected.json") {
            // ItunesReceiptDecoder: the decoded purchase-info must EQUAL this JSON.
            let json = try GJSON.parse(Corpus.bytes(stem + ".expected.json"))
            let object = try #require(json.object)
            SnakeRow.compare(object, purchase, crossCheckDateStrings: true, context: "expected.json", check: &check)
            floor += 10
        }
        if floor == 0 {
            // No sidecar (MOCK_apple-lib_legacyTransaction): the source test asserts
            // `ReceiptUtility.extractTransactionId(transactionReceipt:) == "33993399"`.
            let want = try #require(Corpus.quotedValue(after: "extractTransactionId(transactionReceipt:) == ", in: row.assertions))
            check.equal(purchase.transactionID, want, "transaction-id (source assertion)")
            check.equal(decoded.signature, nil, "signature material (manifest: no signature)")
            floor = 2
        }
        #expect(check.compared >= floor, "\(path): only \(check.compared) fields compared")
    }

    // MARK: - 5. verifyReceipt responses and V1 notifications

    @Test("verifyReceipt responses and V1 notifications match the manifest", arguments: Corpus.list("responses").filter { $0.hasSuffix(".json") })
    func response(path: String) throws {
        let row = try #require(Corpus.manifest[path], "\(path) has no manifest row")
        #expect(row.kind == "response")
        let expected = try #require(ResponseExpectation(notes: row.notes), "\(path): manifest notes have no decoded: section")
        let json = try GJSON.parse(Corpus.bytes(path))
        let body = try #require(json.object, "\(path) is not a JSON object")
        let isNotification = body["notification_type"] != nil || body["unified_receipt"] != nil
        let decoded = try ReceiptDecoder().decode(Corpus.bytes(path))
        var check = FieldCheck(context: path)
        check.equal(decoded.format, isNotification ? .notificationV1 : .verifyResponse, "format")

        // The manifest's decoded: section describes the top level of the body. It prints an empty
        // string as None (merchantkit's receipt has "bundle_id" : ""), so the file itself gives the
        // exact value and the manifest is checked against the file.
        let topReceipt = body["receipt"]?.object
        let fileBundle = topReceipt?["bundle_id"]?.text ?? topReceipt?["bid"]?.text
        let fileType = topReceipt?["receipt_type"]?.text
        #expect(expected.bundleID == fileBundle.flatMap { $0.isEmpty ? nil : $0 }, "\(path): manifest bundle_id disagrees with the file")
        #expect(expected.receiptType == fileType.flatMap { $0.isEmpty ? nil : $0 }, "\(path): manifest receipt_type disagrees with the file")
        let receiptBundle = decoded.receipt?.bundleID ?? decoded.transactions.first { $0.source == .legacyResponse }?.bundleID
        check.equal(receiptBundle, fileBundle, "bundle_id of the response's receipt")
        check.equal(decoded.receipt?.receiptType, fileType, "receipt_type")
        check.equal(decoded.receipt?.inApp.count, expected.inApp, "in_app count")

        // A notification carries its response inside `unified_receipt`; a response carries it at the top.
        let inner = isNotification ? (body["unified_receipt"]?.object ?? [:]) : body
        let wantStatus = isNotification ? inner["status"]?.int64.map(Int.init) : expected.status
        check.equal(decoded.status, wantStatus, "status")
        if isNotification {
            #expect(expected.status == nil, "\(path): manifest gives a top-level status for a notification")
        }

        let rows = { (source: Purchase.Source) in decoded.latestReceiptInfo.filter { $0.source == source } }
        let lriRows = SnakeRow.rows(inner["latest_receipt_info"]) + (isNotification ? SnakeRow.rows(body["latest_receipt_info"]) : [])
        if !isNotification {
            check.equal(lriRows.count, expected.latestReceiptInfo ?? 0, "manifest latest_receipt_info vs file")
        }
        check.equal(rows(.latestReceiptInfo).count, lriRows.count, "latest_receipt_info rows")
        let expiredRows = SnakeRow.rows(inner["latest_expired_receipt_info"]) + (isNotification ? SnakeRow.rows(body["latest_expired_receipt_info"]) : [])
        check.equal(rows(.latestExpiredReceiptInfo).count, expiredRows.count, "latest_expired_receipt_info rows")
        for (index, (want, got)) in zip(lriRows, rows(.latestReceiptInfo)).enumerated() {
            SnakeRow.compare(want, got, crossCheckDateStrings: false, context: "latest_receipt_info[\(index)]", check: &check)
        }
        for (index, (want, got)) in zip(expiredRows, rows(.latestExpiredReceiptInfo)).enumerated() {
            SnakeRow.compare(want, got, crossCheckDateStrings: false, context: "latest_expired_receipt_info[\(index)]", check: &check)
        }

        // The response's own receipt: iOS 7 `in_app` rows, or the iOS 6 single transaction.
        if let receiptObject = inner["receipt"]?.object {
            let inAppRows = SnakeRow.rows(receiptObject["in_app"])
            if receiptObject["in_app"] != nil || receiptObject["bundle_id"] != nil || receiptObject["receipt_type"] != nil {
                let r = try #require(decoded.receipt, "\(path): iOS 7 receipt not decoded")
                check.equal(r.inApp.count, inAppRows.count, "receipt.in_app rows")
                check.equal(r.applicationVersion, receiptObject["application_version"]?.text, "receipt.application_version")
                check.equal(r.originalApplicationVersion, receiptObject["original_application_version"]?.text, "receipt.original_application_version")
                for (index, (want, got)) in zip(inAppRows, r.inApp).enumerated() {
                    SnakeRow.compare(want, got, crossCheckDateStrings: false, context: "in_app[\(index)]", check: &check)
                }
            } else {
                let got = decoded.transactions.filter { $0.source == .legacyResponse }
                check.equal(got.count, 1, "iOS 6 receipt transaction")
                if let first = got.first {
                    SnakeRow.compare(receiptObject, first, crossCheckDateStrings: false, context: "receipt", check: &check)
                }
            }
        } else {
            check.equal(decoded.receipt == nil && decoded.transactions.isEmpty, true, "no receipt in the body, none decoded")
        }

        // latest_receipt, exactly as the body carries it (the manifest gives its length).
        let latest = inner["latest_receipt"]?.string ?? (isNotification ? body["latest_receipt"]?.string : nil)
        check.equal(decoded.latestReceipt, latest, "latest_receipt")
        if !isNotification { check.equal(latest?.count, expected.latestReceiptChars, "manifest latest_receipt length vs file") }

        // Renewal info. Per the model, `pendingRenewalInfo` holds the `pending_renewal_info` entries and,
        // for iOS 6 responses, the renewal fields Apple put at the top level (one subscription).
        let pendingEntries = inner["pending_renewal_info"]?.array ?? []
        let renewalKeys = ["auto_renew_status", "auto_renew_product_id", "expiration_intent", "is_in_billing_retry_period"]
        let topLevelRenewal = renewalKeys.contains { body[$0] != nil }
        var wantPending = pendingEntries.count
        if isNotification {
            // A V1 notification's top-level renewal fields restate the renewal state of the subscription
            // the notification is about, which unified_receipt.pending_renewal_info already lists (same
            // original_transaction_id, or, when the body has none, same auto_renew_product_id). Only a
            // subscription missing from that list is one more entry.
            if topLevelRenewal {
                let otid = body["original_transaction_id"]?.text
                let product = body["auto_renew_product_id"]?.text
                let listed = pendingEntries.contains { entry in
                    if let otid { return entry["original_transaction_id"]?.text == otid }
                    return entry["auto_renew_product_id"]?.text == product
                }
                if !listed { wantPending += 1 }
            }
        } else {
            check.equal(pendingEntries.count, expected.pendingRenewalInfo ?? 0, "manifest pending_renewal_info vs file")
            if topLevelRenewal && inner["pending_renewal_info"] == nil { wantPending += 1 }
        }
        check.equal(decoded.pendingRenewalInfo.count, wantPending, "pending_renewal_info entries")
        for (index, (want, got)) in zip(pendingEntries, decoded.pendingRenewalInfo).enumerated() {
            guard let want = want.object else { continue }
            check.equal(got.originalTransactionID, want["original_transaction_id"]?.text, "pending_renewal_info[\(index)].original_transaction_id")
            check.equal(got.autoRenewProductID, want["auto_renew_product_id"]?.text, "pending_renewal_info[\(index)].auto_renew_product_id")
            check.equal(got.autoRenewStatus, want["auto_renew_status"]?.bool, "pending_renewal_info[\(index)].auto_renew_status")
            check.equal(got.expirationIntent, want["expiration_intent"]?.int64.map(Int.init), "pending_renewal_info[\(index)].expiration_intent")
        }
        if topLevelRenewal, !isNotification, inner["pending_renewal_info"] == nil, let renewal = decoded.pendingRenewalInfo.first {
            check.equal(renewal.autoRenewProductID, body["auto_renew_product_id"]?.text, "top-level auto_renew_product_id")
            check.equal(renewal.autoRenewStatus, body["auto_renew_status"]?.bool, "top-level auto_renew_status")
            check.equal(renewal.expirationIntent, body["expiration_intent"]?.int64.map(Int.init), "top-level expiration_intent")
        }

        // Environment: the manifest gives the top-level `environment`.
        if isNotification {
            let top = body["environment"]?.string
            check.equal(top, expected.environment, "manifest environment vs file")
            check.equal(decoded.environment, top.flatMap(GEnvironment.fromAppleValue), "environment")
            let candidates = [top, inner["environment"]?.string].compactMap { $0 }
            check.equal(decoded.rawEnvironment.map { candidates.contains($0) }, true, "raw environment is one the body wrote")
        } else {
            check.equal(decoded.rawEnvironment, expected.environment, "environment (raw)")
        }

        if isNotification {
            let n = try #require(decoded.notification, "\(path): no notification envelope")
            check.equal(n.notificationType, body["notification_type"]?.string, "notification_type")
            check.equal(n.bundleID, body["bid"]?.text, "bid")
            check.equal(n.bundleVersion, body["bvrs"]?.text, "bvrs")
            check.equal(n.containedSharedSecret, body["password"] != nil, "containedSharedSecret")
            if let secret = body["password"]?.string {
                let json = InspectJSON.encode(InspectJSON.object(for: decoded))
                let text = TextSummary.render(decoded, title: path)
                #expect(!json.contains(secret), "\(path): inspect JSON contains the shared secret")
                #expect(!text.contains(secret), "\(path): text summary contains the shared secret")
                #expect(!n.otherFields.contains { $0.name == "password" || $0.value == secret }, "\(path): secret kept in otherFields")
                check.equal(secret.isEmpty, false, "password present")
            }
        }
        #expect(check.compared >= 10, "\(path): only \(check.compared) fields compared")
    }

    // MARK: - 6. StoreKit 2 JWS

    @Test("StoreKit 2 JWS match their .decoded.json payloads", arguments: Corpus.list("jws").filter { $0.hasSuffix(".jws") })
    func jws(path: String) throws {
        let stem = String(path.dropLast(".jws".count))
        guard Corpus.exists(stem + ".decoded.json") else {
            // No ground truth to compare with: it must still decode.
            _ = try ReceiptDecoder().decode(Corpus.bytes(path))
            return
        }
        let sidecar = try GJSON.parse(Corpus.bytes(stem + ".decoded.json"))
        let payload = try #require(sidecar["payload"]?.object, "\(stem).decoded.json has no payload")
        let header = try #require(sidecar["header"]?.object, "\(stem).decoded.json has no header")
        let decoded = try ReceiptDecoder().decode(Corpus.bytes(path))
        var check = FieldCheck(context: path)

        let want = JWSPayload.expectedFormat(payload: payload, path: path)
        check.equal(decoded.format, want, "format")
        JWSPayload.compare(payload, format: want, decoded: decoded, context: "payload", check: &check)

        // Header: algorithm and certificate chain (MOCK_apple-lib_missingX5CHeaderClaim has `x5cwrong`:
        // it must still decode; the signature check is a later step).
        if case .jws(let token)? = decoded.signature {
            check.equal(token.algorithm, header["alg"]?.string, "header.alg")
            check.equal(token.certificateChain.count, header["x5c"]?.array?.count ?? 0, "header.x5c count")
        } else {
            Issue.record("\(path): no JWS signature material")
        }

        // Nested tokens of a V2 notification against `nested_decoded`.
        let nestedWant = sidecar["nested_decoded"]?.object ?? [:]
        let dataObject = payload["data"]?.object ?? [:]
        let nestedInPayload = ["signedTransactionInfo", "signedRenewalInfo", "signedAppTransactionInfo"].filter { dataObject[$0] != nil }
        check.equal(decoded.nested.map(\.field).sorted(), nestedInPayload.map { "data.\($0)" }.sorted(), "nested fields")
        check.equal(Set(nestedWant.keys), Set(nestedInPayload), "nested_decoded covers every nested token")
        for (key, entry) in nestedWant.sorted(by: { $0.key < $1.key }) {
            let nestedPayload = try #require(entry["payload"]?.object, "\(path): nested_decoded.\(key) has no payload")
            guard let nested = decoded.nested.first(where: { $0.field == "data.\(key)" }) else {
                Issue.record("\(path): data.\(key) not decoded")
                continue
            }
            let format: ReceiptFormat =
                switch key {
                case "signedTransactionInfo": .jwsTransaction
                case "signedRenewalInfo": .jwsRenewal
                default: .jwsAppTransaction
                }
            check.equal(nested.input.format, format, "nested \(key) format")
            JWSPayload.compare(nestedPayload, format: format, decoded: nested.input, context: "nested \(key)", check: &check)
        }
        if want == .jwsNotification {
            // The notification mirrors its nested transaction and renewal info.
            let tx = nestedWant["signedTransactionInfo"]?["payload"]?.object
            check.equal(decoded.transactions.count, tx == nil ? 0 : 1, "notification transactions")
            if let tx, let first = decoded.transactions.first {
                JWSPayload.compareTransaction(tx, first, context: "notification transaction", check: &check)
            }
            let renewal = nestedWant["signedRenewalInfo"]?["payload"]?.object
            check.equal(decoded.pendingRenewalInfo.count, renewal == nil ? 0 : 1, "notification renewal info")
            if let renewal, let first = decoded.pendingRenewalInfo.first {
                JWSPayload.compareRenewal(renewal, first, context: "notification renewal", check: &check)
            }
        }
        #expect(check.compared >= 4, "\(path): only \(check.compared) fields compared")
    }

    @Test("session-pro .expected.txt (fields the upstream patch did not touch)", arguments: Corpus.list("jws").filter { $0.hasSuffix(".expected.txt") })
    func sessionProExpected(path: String) throws {
        // CAUTION (MANIFEST): session-pro-backend patched its expected objects after capture: productId
        // (…pro_sub_1_month instead of the signed …pro_sub) and some None fields. Checking the sidecars
        // against the signed payloads also shows renewal_info.currency = 'AUD' where the signed renewal
        // info of #02/#03/#06/#09/#10 has no currency, and None for autoRenewStatus, renewalDate,
        // recentSubscriptionStartDate, renewalPrice that the payloads carry. So this test uses only
        // non-None, non-productId values of `body`, `body.data` and `tx_info`, skips `renewal_info`
        // entirely (the signed renewal payloads are compared via .decoded.json in `jws(path:)`), and skips
        // enum-typed values (their `raw…` twins are compared instead) and the `<JWS:hash>` placeholders.
        let row = try #require(Corpus.manifest[path], "\(path) has no manifest row")
        let scenarios = try SessionPro.scenarios(expectedPath: path, assertions: row.assertions)
        #expect(!scenarios.isEmpty)
        let lines = try SidecarLine.parse(Corpus.text(path))
        var checkedScenarios = 0
        for scenario in scenarios {
            guard let jwsPath = scenario.jwsPath else {
                // #05 (e01_upgrade_to_1wk) and #13 (e02_apple_refund) are not in the corpus.
                continue
            }
            checkedScenarios += 1
            let decoded = try ReceiptDecoder().decode(Corpus.bytes(jwsPath))
            var check = FieldCheck(context: "\(path) \(scenario.prefix.isEmpty ? "" : scenario.prefix + " ")(\(jwsPath))")
            var unmapped: [String] = []
            for line in lines {
                guard let (section, field) = scenario.split(line.key) else { continue }
                if !SessionPro.compare(section: section, field: field, value: line.value.raw, decoded: decoded, check: &check) {
                    unmapped.append("\(section).\(field)")
                }
            }
            #expect(unmapped.isEmpty, "\(path): unmapped fields \(unmapped)")
            #expect(check.compared >= 25, "\(path) \(scenario.prefix): only \(check.compared) fields compared")
        }
        #expect(checkedScenarios >= 1, "\(path): no scenario has its JWS in the corpus")
    }
}

// MARK: - Corpus access

private enum Corpus {
    /// `<package root>/../shared/corpus`, found from this file's path.
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // ReceiptCoreTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // package root
        .appendingPathComponent("..")
        .appendingPathComponent("shared")
        .appendingPathComponent("corpus")
        .standardizedFileURL

    static var isAvailable: Bool {
        FileManager.default.fileExists(atPath: root.appendingPathComponent("MANIFEST.tsv").path)
    }

    static func url(_ relative: String) -> URL { root.appendingPathComponent(relative) }
    static func exists(_ relative: String) -> Bool { FileManager.default.fileExists(atPath: url(relative).path) }
    static func bytes(_ relative: String) throws -> [UInt8] { Array(try Data(contentsOf: url(relative))) }
    static func text(_ relative: String) throws -> String { String(decoding: try bytes(relative), as: UTF8.self) }

    /// Files directly in `dir`, as sorted corpus-relative paths.
    static func list(_ dir: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url(dir).path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { "\(dir)/\($0)" }
    }

    static func isNegativeName(_ path: String) -> Bool {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return name.hasPrefix("DERIVED_") || name.hasPrefix("TAMPERED_")
    }

    /// `pkcs7/<stem>` of every genuine receipt (.der or .b64, not DERIVED_/TAMPERED_).
    static let receiptStems: [String] = {
        var stems = Set<String>()
        for path in list("pkcs7") where !isNegativeName(path) {
            if path.hasSuffix(".der") { stems.insert(String(path.dropLast(4))) }
            if path.hasSuffix(".b64") { stems.insert(String(path.dropLast(4))) }
        }
        return stems.sorted()
    }()

    /// Negative files: DERIVED_/TAMPERED_ names on disk plus the manifest's `pkcs7-negative*` rows.
    static let negativeFiles: [String] = {
        var paths = Set(list("pkcs7").filter { isNegativeName($0) && ($0.hasSuffix(".der") || $0.hasSuffix(".b64")) })
        for row in manifest.values where row.kind.hasPrefix("pkcs7-negative") { paths.insert(row.path) }
        return paths.sorted()
    }()

    static let manifestLines: [[String]] = {
        guard let data = try? Data(contentsOf: url("MANIFEST.tsv")) else { return [] }
        let text = String(decoding: data, as: UTF8.self)
        return text.split(separator: "\n", omittingEmptySubsequences: true).dropFirst().map {
            $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        }
    }()

    static let malformedManifestLines: [String] = manifestLines.filter { $0.count != 6 }.map { $0.first ?? "?" }

    static let manifest: [String: ManifestRow] = {
        var rows: [String: ManifestRow] = [:]
        for cols in manifestLines where cols.count == 6 {
            rows[cols[0]] = ManifestRow(
                path: cols[0], kind: cols[1], sourceRepo: cols[2], sourcePath: cols[3], assertions: cols[4], notes: cols[5])
        }
        return rows
    }()

    /// The double-quoted value that follows `marker` in `text`.
    static func quotedValue(after marker: String, in text: String) -> String? {
        guard let range = text.range(of: marker + "\"") else { return nil }
        let rest = text[range.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }
}

private struct ManifestRow: Sendable {
    var path: String
    var kind: String
    var sourceRepo: String
    var sourcePath: String
    var assertions: String
    var notes: String
}

/// The manifest's `decoded: {json}; in_app=N; products=a,b` for a PKCS#7 receipt.
private struct PKCS7Expectation {
    var fields: [String: String]
    var inAppCount: Int
    var products: Set<String>

    init?(notes: String) {
        guard let start = notes.range(of: "decoded: {") else { return nil }
        let jsonStart = notes.index(before: start.upperBound)
        guard let close = notes[jsonStart...].firstIndex(of: "}") else { return nil }
        guard let json = try? GJSON.parse(Array(notes[jsonStart...close].utf8)), let object = json.object else { return nil }
        fields = object.compactMapValues(\.string)
        let rest = notes[notes.index(after: close)...]
        guard let inApp = rest.range(of: "; in_app=") else { return nil }
        let digits = rest[inApp.upperBound...].prefix { $0.isNumber }
        guard let count = Int(digits) else { return nil }
        inAppCount = count
        guard let productsRange = rest.range(of: "; products=") else { return nil }
        let list = rest[productsRange.upperBound...].prefix { $0 != " " && $0 != "|" }
        products = Set(list.split(separator: ",").map(String.init))
    }
}

/// The manifest's `decoded: status=.. environment=.. bundle_id=.. …` for a response body.
private struct ResponseExpectation {
    var status: Int?
    var environment: String?
    var bundleID: String?
    var receiptType: String?
    var inApp: Int?
    /// `dict` counts as one row.
    var latestReceiptInfo: Int?
    var pendingRenewalInfo: Int?
    var latestReceiptChars: Int?

    init?(notes: String) {
        guard let start = notes.range(of: "decoded: ") else { return nil }
        let section = String(notes[start.upperBound...])
        func value(_ key: String) -> String? {
            guard let r = section.range(of: key + "=") else { return nil }
            if r.lowerBound != section.startIndex, section[section.index(before: r.lowerBound)] != " " { return nil }
            let v = String(section[r.upperBound...].prefix { $0 != " " })
            return v == "None" ? nil : v
        }
        guard section.contains("status=") else { return nil }
        status = value("status").flatMap { Int($0) }
        environment = value("environment")
        bundleID = value("bundle_id")
        receiptType = value("receipt_type")
        inApp = value("in_app").flatMap { Int($0) }
        latestReceiptInfo = value("latest_receipt_info").flatMap { $0 == "dict" ? 1 : Int($0) }
        pendingRenewalInfo = value("pending_renewal_info").flatMap { Int($0) }
        if let latest = value("latest_receipt"), latest.hasPrefix("yes(") {
            latestReceiptChars = Int(latest.dropFirst(4).prefix { $0.isNumber })
        }
    }
}

// MARK: - Comparing with a count

/// Records each comparison, so a test can insist it compared a real number of fields.
private struct FieldCheck {
    let context: String
    private(set) var compared = 0

    init(context: String) { self.context = context }

    mutating func equal<T: Equatable>(
        _ got: T?, _ expected: T?, _ field: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        compared += 1
        #expect(got == expected, "\(context): \(field): expected \(show(expected)), got \(show(got))", sourceLocation: sourceLocation)
    }

    /// Compares two instants to the millisecond.
    mutating func instant(
        _ got: Date?, _ expected: Date?, _ field: String, tolerance: TimeInterval = 0.001,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        compared += 1
        let same: Bool
        switch (got, expected) {
        case (nil, nil): same = true
        case (let g?, let e?): same = abs(g.timeIntervalSince(e)) <= tolerance
        default: same = false
        }
        #expect(same, "\(context): \(field): expected \(showDate(expected)), got \(showDate(got))", sourceLocation: sourceLocation)
    }

    private func show<T>(_ value: T?) -> String {
        guard let value else { return "nil" }
        if let bytes = value as? [UInt8] { return "base64:" + Data(bytes).base64EncodedString() }
        return String(reflecting: value)
    }

    private func showDate(_ date: Date?) -> String {
        guard let date else { return "nil" }
        return "\(date) (\(date.timeIntervalSince1970))"
    }
}

// MARK: - Ground-truth readers (independent of ReceiptCore)

private struct GroundTruthError: Error, CustomStringConvertible {
    var description: String
}

/// JSON as written in a sidecar, decoded with Foundation.
private indirect enum GJSON: Decodable, Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([GJSON])
    case object([String: GJSON])

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let i = try? c.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? c.decode(Double.self) {
            self = .double(d)
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([GJSON].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: GJSON].self))
        }
    }

    static func parse(_ bytes: [UInt8]) throws -> GJSON {
        try JSONDecoder().decode(GJSON.self, from: Data(bytes))
    }

    subscript(key: String) -> GJSON? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    var object: [String: GJSON]? {
        if case .object(let o) = self { return o }
        return nil
    }

    var array: [GJSON]? {
        if case .array(let a) = self { return a }
        return nil
    }

    var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// Strings as they are, integers in decimal.
    var text: String? {
        switch self {
        case .string(let s): s
        case .int(let i): String(i)
        case .bool(let b): b ? "true" : "false"
        default: nil
        }
    }

    var int64: Int64? {
        switch self {
        case .int(let i): i
        case .string(let s): Int64(s)
        default: nil
        }
    }

    var double: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        case .string(let s): Double(s)
        default: nil
        }
    }

    var bool: Bool? {
        switch self {
        case .bool(let b): b
        case .int(let i): i != 0
        case .string(let s):
            switch s {
            case "true", "1": true
            case "false", "0": false
            default: nil
            }
        default: nil
        }
    }

    /// Epoch milliseconds (number or digit string) as a date.
    var millisecondsDate: Date? {
        double.map { Date(timeIntervalSince1970: $0 / 1000) }
    }
}

/// A flat OpenStep plist dictionary of strings (`{ "key" = "value"; … }`), as the iOS 6 sidecars are.
private enum GPlist {
    static func parse(_ text: String) throws -> [String: String] {
        var parser = Parser(bytes: Array(text.utf8))
        let dictionary = try parser.dictionary()
        parser.skipSpace()
        guard parser.index == parser.bytes.count else { throw GroundTruthError(description: "plist: text after the dictionary") }
        return dictionary
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func skipSpace() {
            while index < bytes.count, [9, 10, 13, 32].contains(bytes[index]) { index += 1 }
        }

        mutating func expect(_ c: UInt8) throws {
            skipSpace()
            guard index < bytes.count, bytes[index] == c else {
                throw GroundTruthError(description: "plist: expected '\(Character(Unicode.Scalar(c)))' at byte \(index)")
            }
            index += 1
        }

        mutating func string() throws -> String {
            skipSpace()
            guard index < bytes.count else { throw GroundTruthError(description: "plist: unexpected end") }
            var out: [UInt8] = []
            if bytes[index] == UInt8(ascii: "\"") {
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                    if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count {
                        index += 1
                        switch bytes[index] {
                        case UInt8(ascii: "n"): out.append(10)
                        case UInt8(ascii: "t"): out.append(9)
                        default: out.append(bytes[index])
                        }
                    } else {
                        out.append(bytes[index])
                    }
                    index += 1
                }
                try expect(UInt8(ascii: "\""))
            } else {
                while index < bytes.count, isBare(bytes[index]) {
                    out.append(bytes[index])
                    index += 1
                }
                guard !out.isEmpty else { throw GroundTruthError(description: "plist: expected a string at byte \(index)") }
            }
            return String(decoding: out, as: UTF8.self)
        }

        private func isBare(_ b: UInt8) -> Bool {
            (48...57).contains(b) || (65...90).contains(b) || (97...122).contains(b) || [45, 46, 47, 95, 36, 58].contains(b)
        }

        mutating func dictionary() throws -> [String: String] {
            try expect(UInt8(ascii: "{"))
            var result: [String: String] = [:]
            while true {
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return result
                }
                let key = try string()
                try expect(UInt8(ascii: "="))
                let value = try string()
                try expect(UInt8(ascii: ";"))
                result[key] = value
            }
        }
    }
}

private enum GBase64 {
    static func decode(_ text: String, _ what: String) throws -> [UInt8] {
        let compact = text.filter { !$0.isWhitespace }
        guard let data = Data(base64Encoded: compact) else { throw GroundTruthError(description: "\(what): not base64") }
        return Array(data)
    }
}

/// Dates as the corpus writes them: RFC 3339 (`2020-07-22T18:33:15+0100`, `…Z`, `….123Z`) and
/// verifyReceipt's `2012-04-30 15:05:55 Etc/GMT` / `… America/Los_Angeles`.
private enum GDate {
    static func require(_ text: String, _ what: String) throws -> Date {
        guard let date = parse(text) else { throw GroundTruthError(description: "\(what): not a date: \(text)") }
        return date
    }

    static func parse(_ text: String) -> Date? {
        let s = Array(text.trimmingCharacters(in: .whitespaces).utf8)
        guard s.count >= 19 else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= s.count else { return nil }
            var value = 0
            for i in range {
                guard (48...57).contains(s[i]) else { return nil }
                value = value * 10 + Int(s[i] - 48)
            }
            return value
        }
        guard let year = number(0..<4), s[4] == 45, let month = number(5..<7), s[7] == 45, let day = number(8..<10),
            s[10] == 84 || s[10] == 32, let hour = number(11..<13), s[13] == 58, let minute = number(14..<16), s[16] == 58,
            let second = number(17..<19)
        else { return nil }
        var i = 19
        var fraction = 0.0
        if i < s.count, s[i] == 46 {
            i += 1
            var scale = 0.1
            while i < s.count, (48...57).contains(s[i]) {
                fraction += Double(s[i] - 48) * scale
                scale /= 10
                i += 1
            }
        }
        var zone = TimeZone(secondsFromGMT: 0)!
        var offset = 0
        if i < s.count {
            switch s[i] {
            case 90:  // Z
                i += 1
            case 43, 45:  // +hhmm, +hh:mm
                let sign = s[i] == 45 ? -1 : 1
                guard let hh = number(i + 1..<i + 3) else { return nil }
                var j = i + 3
                if j < s.count, s[j] == 58 { j += 1 }
                guard let mm = number(j..<j + 2) else { return nil }
                offset = sign * (hh * 3600 + mm * 60)
                i = j + 2
            case 32:
                let name = String(decoding: s[(i + 1)...], as: UTF8.self)
                guard let named = TimeZone(identifier: name) ?? (name == "Etc/GMT" ? TimeZone(secondsFromGMT: 0) : nil) else {
                    return nil
                }
                zone = named
                i = s.count
            default:
                return nil
            }
        }
        guard i == s.count else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        guard let base = calendar.date(from: components) else { return nil }
        return base.addingTimeInterval(fraction - Double(offset))
    }
}

/// Apple's environment spellings, normalised as Apple documents them.
private enum GEnvironment {
    static func fromReceiptType(_ value: String) -> StoreEnvironment? {
        switch value {
        case "Production", "ProductionVPP": .production
        case "ProductionSandbox", "ProductionVPPSandbox": .sandbox
        case "Xcode": .xcode
        default: nil
        }
    }

    static func fromAppleValue(_ value: String) -> StoreEnvironment? {
        switch value {
        case "PROD", "Production": .production
        case "Sandbox": .sandbox
        case "Xcode": .xcode
        case "LocalTesting": .localTesting
        default: fromReceiptType(value)
        }
    }
}

// MARK: - Sidecar lines (`key = value`)

private struct SidecarLine {
    enum Dialect { case ideasOnCanvas, revenueCat }

    var number: Int
    var key: String
    var value: SidecarValue

    /// Non-comment `key = value` lines.
    static func parse(_ text: String) throws -> [SidecarLine] {
        var lines: [SidecarLine] = []
        for (offset, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let eq = line.range(of: " = ") else {
                throw GroundTruthError(description: "sidecar line \(offset + 1) is not key = value: \(line)")
            }
            lines.append(
                SidecarLine(
                    number: offset + 1, key: String(line[..<eq.lowerBound]), value: SidecarValue(raw: String(line[eq.upperBound...]))))
        }
        return lines
    }

    /// `inAppPurchaseReceipts[i].f` (IdeasOnCanvas), `inAppPurchases[i].f` or `inAppPurchaseN.f` (RevenueCat).
    static func purchaseKey(_ key: String) -> (Int, String, Dialect)? {
        guard let dot = key.firstIndex(of: ".") else { return nil }
        let head = key[..<dot]
        let field = String(key[key.index(after: dot)...])
        for (prefix, dialect) in [("inAppPurchaseReceipts[", Dialect.ideasOnCanvas), ("inAppPurchases[", .revenueCat)] {
            if head.hasPrefix(prefix), head.hasSuffix("]"), let i = Int(head.dropFirst(prefix.count).dropLast()) {
                return (i, field, dialect)
            }
        }
        if head.hasPrefix("inAppPurchase"), let i = Int(head.dropFirst("inAppPurchase".count)) {
            return (i, field, .revenueCat)
        }
        return nil
    }
}

/// One value as the sidecars spell it.
private struct SidecarValue {
    var raw: String

    var isNil: Bool { raw == "nil" }

    private var unquoted: String? {
        guard raw.count >= 2, raw.hasPrefix("\""), raw.hasSuffix("\"") else { return nil }
        return String(raw.dropFirst().dropLast())
    }

    private func fail(_ what: String, _ context: String) -> GroundTruthError {
        GroundTruthError(description: "\(context): cannot read \(raw) as \(what)")
    }

    func string(_ context: String) throws -> String? {
        if isNil { return nil }
        guard let s = unquoted else { throw fail("a string", context) }
        return s
    }

    /// `base64:…` or a quoted base64 string.
    func data(_ context: String) throws -> [UInt8]? {
        if isNil { return nil }
        if raw.hasPrefix("base64:") { return try GBase64.decode(String(raw.dropFirst(7)), context) }
        if let s = unquoted { return try GBase64.decode(s, context) }
        throw fail("base64 data", context)
    }

    /// ISO 8601 (quoted or not), `Date(timeIntervalSince1970: N)`, `unix:N`.
    func date(_ context: String) throws -> Date? {
        if isNil { return nil }
        for prefix in ["Date(timeIntervalSince1970: ", "unix:"] where raw.hasPrefix(prefix) {
            var body = raw.dropFirst(prefix.count)
            if body.hasSuffix(")") { body = body.dropLast() }
            guard let seconds = Double(body) else { throw fail("a date", context) }
            return Date(timeIntervalSince1970: seconds)
        }
        guard let date = GDate.parse(unquoted ?? raw) else { throw fail("a date", context) }
        return date
    }

    /// `N` or `Int64(N)`.
    func int(_ context: String) throws -> Int64? {
        if isNil { return nil }
        var body = Substring(raw)
        if body.hasPrefix("Int64("), body.hasSuffix(")") { body = body.dropFirst(6).dropLast() }
        guard let value = Int64(body) else { throw fail("an integer", context) }
        return value
    }

    /// `N` or `haveCount(N)`.
    func count(_ context: String) throws -> Int {
        var body = Substring(raw)
        if body.hasPrefix("haveCount("), body.hasSuffix(")") { body = body.dropFirst(10).dropLast() }
        guard let value = Int(body) else { throw fail("a count", context) }
        return value
    }

    func bool(_ context: String) throws -> Bool? {
        switch raw {
        case "nil": return nil
        case "true": return true
        case "false": return false
        default: throw fail("a boolean", context)
        }
    }

    func productType(_ context: String) throws -> ProductType? {
        switch raw {
        case "nil": return nil
        case ".autoRenewableSubscription": return .autoRenewable
        case ".nonRenewingSubscription": return .nonRenewing
        case ".consumable": return .consumable
        case ".nonConsumable": return .nonConsumable
        case ".unknown": return .unknown
        default: throw fail("a product type", context)
        }
    }

    func environment(_ context: String) throws -> StoreEnvironment? {
        switch raw {
        case ".production": return .production
        case ".sandbox": return .sandbox
        case ".xcode": return .xcode
        default: throw fail("an environment", context)
        }
    }
}

// MARK: - verifyReceipt-style rows (snake_case, iOS 6 purchase-info with dashes turned into underscores)

private enum SnakeRow {
    /// Rows of a `latest_receipt_info`-like value: an array of objects, or (iOS 6) one object.
    static func rows(_ value: GJSON?) -> [[String: GJSON]] {
        switch value {
        case .object(let o)?: [o]
        case .array(let a)?: a.compactMap(\.object)
        default: []
        }
    }

    /// Date keys: the `_ms` twin (epoch ms) is what Apple means; the strings say the same to the second.
    private static var dateKeys: [(key: String, path: KeyPath<Purchase, Date?>)] {
        [
        ("purchase_date", \.purchaseDate), ("original_purchase_date", \.originalPurchaseDate),
        ("expires_date", \.expiresDate), ("cancellation_date", \.cancellationDate),
        ]
    }

    /// Compares a row with the purchase decoded from it. With `crossCheckDateStrings`, the
    /// human-readable date strings (`…_date`, `…_formatted`, `…_pst`) are checked too (to the second);
    /// without it only the authoritative value is (sanitised fixtures edit one and not the other).
    static func compare(
        _ row: [String: GJSON], _ p: Purchase, crossCheckDateStrings: Bool, context: String, check: inout FieldCheck
    ) {
        var used = Set<String>()
        func text(_ key: String) -> String? {
            used.insert(key)
            return row[key]?.text
        }
        if row["transaction_id"] != nil { check.equal(p.transactionID, text("transaction_id"), "\(context).transaction_id") }
        if row["original_transaction_id"] != nil {
            check.equal(p.originalTransactionID, text("original_transaction_id"), "\(context).original_transaction_id")
        }
        if row["product_id"] != nil { check.equal(p.productID, text("product_id"), "\(context).product_id") }
        if row["quantity"] != nil { check.equal(p.quantity.map(Int64.init), row["quantity"]?.int64, "\(context).quantity"); used.insert("quantity") }
        if row["bid"] != nil { check.equal(p.bundleID, text("bid"), "\(context).bid") }
        if row["bvrs"] != nil { check.equal(p.bundleVersion, text("bvrs"), "\(context).bvrs") }
        if row["web_order_line_item_id"] != nil {
            check.equal(p.webOrderLineItemID, text("web_order_line_item_id"), "\(context).web_order_line_item_id")
        }
        for (key, name) in [
            ("is_trial_period", \Purchase.isTrialPeriod), ("is_in_intro_offer_period", \.isInIntroOfferPeriod), ("is_upgraded", \.isUpgraded),
        ] where row[key] != nil {
            used.insert(key)
            check.equal(p[keyPath: name], row[key]?.bool, "\(context).\(key)")
        }
        for (key, name) in [
            ("promotional_offer_id", \Purchase.promotionalOfferID), ("offer_code_ref_name", \.offerCodeRefName),
            ("subscription_group_identifier", \.subscriptionGroupIdentifier), ("in_app_ownership_type", \.inAppOwnershipType),
            ("app_account_token", \.appAccountToken),
        ] where row[key] != nil {
            check.equal(p[keyPath: name], text(key), "\(context).\(key)")
        }
        if row["cancellation_reason"] != nil {
            check.equal(p.cancellationReason.map(Int64.init), row["cancellation_reason"]?.int64, "\(context).cancellation_reason")
            used.insert("cancellation_reason")
        }
        for (key, path) in dateKeys {
            let got = p[keyPath: path]
            let twins = [key, key + "_ms", key + "_pst", key + "_formatted", key + "_formatted_pst"]
            guard twins.contains(where: { row[$0] != nil }) else { continue }
            used.formUnion(twins)
            // The authoritative value: `_ms`, else `key` (epoch ms as iOS 6 wrote expires_date, or a date
            // string), else `key_formatted`. A value masked by the fixture's author ("******") is no date.
            func readable(_ value: GJSON?) -> Date? {
                guard let text = value?.text, !text.isEmpty else { return nil }
                return text.allSatisfy(\.isNumber) ? value?.millisecondsDate : GDate.parse(text)
            }
            let authoritative = readable(row[key + "_ms"]) ?? readable(row[key]) ?? readable(row[key + "_formatted"])
            check.instant(got, authoritative, "\(context).\(key)")
            guard crossCheckDateStrings else { continue }
            for twin in [key, key + "_formatted", key + "_pst", key + "_formatted_pst"] {
                guard let value = row[twin]?.text, !value.isEmpty, !value.allSatisfy(\.isNumber) else { continue }
                check.instant(got, GDate.parse(value), "\(context).\(twin)", tolerance: 1)
            }
        }
        // Everything else must be kept verbatim in otherFields, not dropped.
        for (key, value) in row where !used.contains(key) {
            guard let want = value.text else { continue }
            check.equal(p.otherFields.first { $0.name == key }?.value, want, "\(context).\(key) kept in otherFields")
        }
    }
}

// MARK: - StoreKit 2 payloads

private enum JWSPayload {
    /// The format a token must decode as: notifications carry `notificationType`; otherwise the
    /// corpus names say which kind of payload it is (and the source tests decode them as such:
    /// testTransactionInfoDecoding, testRenewalInfoDecoding, testXcodeSignedAppTransaction, …).
    /// Keys that only one kind of payload carries; a payload with none of them fits no kind.
    static let kindKeys = [
        "notificationType", "transactionId", "purchaseDate", "bundleId", "autoRenewProductId", "autoRenewStatus", "expirationIntent",
        "renewalDate", "recentSubscriptionStartDate", "renewalPrice", "gracePeriodExpiresDate", "isInBillingRetryPeriod",
        "priceIncreaseStatus", "receiptType", "applicationVersion", "originalApplicationVersion", "deviceVerification", "appAppleId",
        "requestIdentifier", "userLocale",
    ]

    static func expectedFormat(payload: [String: GJSON], path: String) -> ReceiptFormat {
        if payload["notificationType"] != nil { return .jwsNotification }
        // Apple's own mock "renewalInfo" holds only environment and signedDate: nothing says
        // what it is, so it is not read as the nearest kind.
        if !kindKeys.contains(where: { payload[$0] != nil }) { return .unknown }
        let name = path.lowercased()
        if name.contains("renewalinfo") { return .jwsRenewal }
        if name.contains("app-transaction") || name.contains("apptransaction") { return .jwsAppTransaction }
        return .jwsTransaction
    }

    static func compare(
        _ payload: [String: GJSON], format: ReceiptFormat, decoded: DecodedInput, context: String, check: inout FieldCheck
    ) {
        switch format {
        case .jwsTransaction:
            check.equal(decoded.transactions.count, 1, "\(context): transactions")
            if let p = decoded.transactions.first { compareTransaction(payload, p, context: context, check: &check) }
            check.equal(decoded.rawEnvironment, payload["environment"]?.string, "\(context).environment (raw)")
        case .jwsRenewal:
            check.equal(decoded.pendingRenewalInfo.count, 1, "\(context): renewal info")
            if let r = decoded.pendingRenewalInfo.first { compareRenewal(payload, r, context: context, check: &check) }
            check.equal(decoded.rawEnvironment, payload["environment"]?.string, "\(context).environment (raw)")
        case .jwsAppTransaction:
            if let r = decoded.receipt {
                compareAppTransaction(payload, r, context: context, check: &check)
            } else {
                Issue.record("\(context): no AppTransaction decoded")
            }
            check.equal(decoded.rawEnvironment, payload["receiptType"]?.string, "\(context).receiptType (raw environment)")
        case .jwsNotification:
            compareNotification(payload, decoded, context: context, check: &check)
        case .unknown:
            check.equal(Set(decoded.payloadFields.map(\.name)), Set(payload.keys), "\(context): fields kept as sent")
            check.equal(decoded.rawEnvironment, payload["environment"]?.string, "\(context).environment (raw)")
        default:
            Issue.record("\(context): unexpected format \(format)")
        }
        if let raw = decoded.rawEnvironment, let normal = GEnvironment.fromAppleValue(raw) {
            check.equal(decoded.environment, normal, "\(context): environment")
        }
    }

    private static func ms(_ payload: [String: GJSON], _ key: String) -> Date? { payload[key]?.millisecondsDate }

    static func compareTransaction(_ payload: [String: GJSON], _ p: Purchase, context: String, check: inout FieldCheck) {
        let strings: [(String, KeyPath<Purchase, String?>)] = [
            ("transactionId", \.transactionID), ("originalTransactionId", \.originalTransactionID),
            ("webOrderLineItemId", \.webOrderLineItemID), ("bundleId", \.bundleID), ("productId", \.productID),
            ("subscriptionGroupIdentifier", \.subscriptionGroupIdentifier), ("inAppOwnershipType", \.inAppOwnershipType),
            ("appAccountToken", \.appAccountToken), ("offerIdentifier", \.offerIdentifier),
            ("offerDiscountType", \.offerDiscountType), ("environment", \.environment), ("storefront", \.storefront),
            ("storefrontId", \.storefrontID), ("transactionReason", \.transactionReason), ("currency", \.currency),
            ("revocationType", \.revocationType), ("offerPeriod", \.offerPeriod), ("appTransactionId", \.appTransactionID),
            ("previousOriginalTransactionId", \.previousOriginalTransactionID), ("billingPlanType", \.billingPlanType),
        ]
        let dates: [(String, KeyPath<Purchase, Date?>)] = [
            ("purchaseDate", \.purchaseDate), ("originalPurchaseDate", \.originalPurchaseDate), ("expiresDate", \.expiresDate),
            ("revocationDate", \.cancellationDate), ("signedDate", \.signedDate),
        ]
        var mapped = Set<String>()
        for (key, path) in strings where payload[key] != nil {
            mapped.insert(key)
            check.equal(p[keyPath: path], payload[key]?.text, "\(context).\(key)")
        }
        for (key, path) in dates where payload[key] != nil {
            mapped.insert(key)
            check.instant(p[keyPath: path], ms(payload, key), "\(context).\(key)")
        }
        for (key, got) in [
            ("quantity", p.quantity.map(Int64.init)), ("offerType", p.offerType.map(Int64.init)),
            ("revocationReason", p.cancellationReason.map(Int64.init)), ("price", p.priceMilliunits),
            ("revocationPercentage", p.revocationPercentage),
        ] where payload[key] != nil {
            mapped.insert(key)
            check.equal(got, payload[key]?.int64, "\(context).\(key)")
        }
        if let type = payload["type"] {
            mapped.insert("type")
            check.equal(p.productType?.rawValue, type.string, "\(context).type")
        }
        if let upgraded = payload["isUpgraded"] {
            mapped.insert("isUpgraded")
            check.equal(p.isUpgraded, upgraded.bool, "\(context).isUpgraded")
        }
        keptVerbatim(payload, except: mapped, in: p.otherFields, context: context, check: &check)
    }

    static func compareRenewal(_ payload: [String: GJSON], _ r: RenewalInfo, context: String, check: inout FieldCheck) {
        let strings: [(String, KeyPath<RenewalInfo, String?>)] = [
            ("originalTransactionId", \.originalTransactionID), ("productId", \.productID),
            ("autoRenewProductId", \.autoRenewProductID), ("offerIdentifier", \.offerIdentifier),
            ("environment", \.environment), ("currency", \.currency), ("offerDiscountType", \.offerDiscountType),
            ("offerPeriod", \.offerPeriod), ("appTransactionId", \.appTransactionID), ("renewalBillingPlanType", \.renewalBillingPlanType),
        ]
        let dates: [(String, KeyPath<RenewalInfo, Date?>)] = [
            ("gracePeriodExpiresDate", \.gracePeriodExpiresDate), ("signedDate", \.signedDate),
            ("recentSubscriptionStartDate", \.recentSubscriptionStartDate), ("renewalDate", \.renewalDate),
        ]
        var mapped = Set<String>()
        for (key, path) in strings where payload[key] != nil {
            mapped.insert(key)
            check.equal(r[keyPath: path], payload[key]?.text, "\(context).\(key)")
        }
        for (key, path) in dates where payload[key] != nil {
            mapped.insert(key)
            check.instant(r[keyPath: path], ms(payload, key), "\(context).\(key)")
        }
        for (key, got) in [
            ("expirationIntent", r.expirationIntent.map(Int64.init)), ("priceIncreaseStatus", r.priceIncreaseStatus.map(Int64.init)),
            ("offerType", r.offerType.map(Int64.init)), ("renewalPrice", r.renewalPriceMilliunits),
        ] where payload[key] != nil {
            mapped.insert(key)
            check.equal(got, payload[key]?.int64, "\(context).\(key)")
        }
        for (key, got) in [("autoRenewStatus", r.autoRenewStatus), ("isInBillingRetryPeriod", r.isInBillingRetryPeriod)]
        where payload[key] != nil {
            mapped.insert(key)
            check.equal(got, payload[key]?.bool, "\(context).\(key)")
        }
        keptVerbatim(payload, except: mapped, in: r.otherFields, context: context, check: &check)
    }

    static func compareAppTransaction(_ payload: [String: GJSON], _ r: AppReceipt, context: String, check: inout FieldCheck) {
        let strings: [(String, KeyPath<AppReceipt, String?>)] = [
            ("receiptType", \.receiptType), ("bundleId", \.bundleID), ("applicationVersion", \.applicationVersion),
            ("originalApplicationVersion", \.originalApplicationVersion), ("deviceVerification", \.deviceVerification),
            ("deviceVerificationNonce", \.deviceVerificationNonce), ("appTransactionId", \.appTransactionID),
            ("originalPlatform", \.originalPlatform),
        ]
        let dates: [(String, KeyPath<AppReceipt, Date?>)] = [
            ("receiptCreationDate", \.receiptCreationDate), ("originalPurchaseDate", \.originalPurchaseDate),
            ("preorderDate", \.preorderDate),
        ]
        var mapped = Set<String>()
        for (key, path) in strings where payload[key] != nil {
            mapped.insert(key)
            check.equal(r[keyPath: path], payload[key]?.text, "\(context).\(key)")
        }
        for (key, path) in dates where payload[key] != nil {
            mapped.insert(key)
            check.instant(r[keyPath: path], ms(payload, key), "\(context).\(key)")
        }
        for (key, got) in [("appAppleId", r.appItemID), ("versionExternalIdentifier", r.versionExternalIdentifier)]
        where payload[key] != nil {
            mapped.insert(key)
            check.equal(got, payload[key]?.int64, "\(context).\(key)")
        }
        // `requestDate` has no AppTransaction counterpart in the model (AppReceipt.requestDate is
        // documented as verifyReceipt-only), so it must be kept in otherFields.
        keptVerbatim(payload, except: mapped, in: r.otherFields, context: context, check: &check)
    }

    static func compareNotification(_ payload: [String: GJSON], _ decoded: DecodedInput, context: String, check: inout FieldCheck) {
        guard let n = decoded.notification else {
            Issue.record("\(context): no notification envelope")
            return
        }
        var mapped = Set<String>()
        for (key, got) in [
            ("notificationType", n.notificationType), ("subtype", n.subtype), ("notificationUUID", n.notificationUUID),
            ("version", n.version),
        ] {
            mapped.insert(key)
            check.equal(got, payload[key]?.text, "\(context).\(key)")
        }
        mapped.insert("signedDate")
        check.instant(n.signedDate, ms(payload, "signedDate"), "\(context).signedDate")
        let container = ["data", "summary", "externalPurchaseToken", "appData"].first { payload[$0]?.object != nil }
        let data = container.flatMap { payload[$0]?.object } ?? [:]
        if let container { mapped.insert(container) }
        let prefix = "\(context).\(container ?? "data")"
        check.equal(decoded.rawEnvironment, data["environment"]?.string, "\(prefix).environment (raw)")
        check.equal(n.appAppleID, data["appAppleId"]?.int64, "\(prefix).appAppleId")
        check.equal(n.bundleID, data["bundleId"]?.text, "\(prefix).bundleId")
        check.equal(n.bundleVersion, data["bundleVersion"]?.text, "\(prefix).bundleVersion")
        check.equal(n.subscriptionStatus.map(Int64.init), data["status"]?.int64, "\(prefix).status")
        check.equal(n.consumptionRequestReason, data["consumptionRequestReason"]?.text, "\(prefix).consumptionRequestReason")
        let dataMapped: Set<String> = [
            "environment", "appAppleId", "bundleId", "bundleVersion", "status", "consumptionRequestReason",
            "signedTransactionInfo", "signedRenewalInfo", "signedAppTransactionInfo",
        ]
        let prefixed = data.reduce(into: [String: GJSON]()) { $0["\(container ?? "data").\($1.key)"] = $1.value }
        keptVerbatim(
            prefixed, except: Set(dataMapped.map { "\(container ?? "data").\($0)" }), in: n.otherFields, context: context,
            check: &check)
        keptVerbatim(payload, except: mapped, in: n.otherFields, context: context, check: &check)
    }

    /// Payload keys the model has no name for must be kept in `otherFields`, not dropped.
    private static func keptVerbatim(
        _ payload: [String: GJSON], except mapped: Set<String>, in fields: [Field], context: String, check: inout FieldCheck
    ) {
        for key in payload.keys.sorted() where !mapped.contains(key) {
            check.equal(fields.contains { $0.name == key }, true, "\(context).\(key) kept in otherFields")
        }
    }
}

// MARK: - session-pro-backend expected objects

private enum SessionPro {
    struct Scenario {
        /// `e00_sub_to_3_months` in group files, empty in single files.
        var prefix: String
        var jwsPath: String?

        /// Splits `e00_…_tx_info.transactionId` / `body.data.bundleId` into (section, field).
        func split(_ key: String) -> (String, String)? {
            var rest = Substring(key)
            if !prefix.isEmpty {
                guard rest.hasPrefix(prefix + "_") else { return nil }
                rest = rest.dropFirst(prefix.count + 1)
            }
            for section in ["body_data.", "body.data.", "body.", "renewal_info.", "tx_info."] where rest.hasPrefix(section) {
                let name = section == "body_data." ? "body.data" : String(section.dropLast())
                return (name, String(rest.dropFirst(section.count)))
            }
            return nil
        }
    }

    /// The scenarios of a sidecar and the JWS each belongs to. Group files map `eNN_name=#MM` (manifest).
    static func scenarios(expectedPath: String, assertions: String) throws -> [Scenario] {
        let files = Corpus.list("jws")
        if !expectedPath.contains("_group_") {
            let jws = String(expectedPath.dropLast(".expected.txt".count)) + ".jws"
            return [Scenario(prefix: "", jwsPath: Corpus.exists(jws) ? jws : nil)]
        }
        var result: [Scenario] = []
        let separators = CharacterSet(charactersIn: " ,()")
        for token in assertions.components(separatedBy: separators) where token.contains("=#") && token.hasPrefix("e") {
            let parts = token.components(separatedBy: "=#")
            guard parts.count == 2, parts[1].count == 2 else { continue }
            let jws = files.first {
                $0.hasPrefix("jws/session-pro_\(parts[1])_") && $0.hasSuffix(".jws") && !$0.contains(".signed")
            }
            result.append(Scenario(prefix: parts[0], jwsPath: jws))
        }
        if result.isEmpty { throw GroundTruthError(description: "\(expectedPath): no eNN=#MM mapping in the manifest") }
        return result
    }

    /// Compares one expected field. Returns false for a field this test has no mapping for.
    static func compare(section: String, field: String, value raw: String, decoded: DecodedInput, check: inout FieldCheck) -> Bool {
        // Only quoted strings and integers; `None` and enum members are skipped (see the CAUTION).
        let value: GJSON
        if raw.count >= 2, raw.hasPrefix("'"), raw.hasSuffix("'") {
            value = .string(String(raw.dropFirst().dropLast()))
        } else if let i = Int64(raw) {
            value = .int(i)
        } else {
            return true
        }
        if section == "renewal_info" || field == "productId" { return true }
        let context = "\(section).\(field)"
        switch section {
        case "body":
            guard let n = decoded.notification else { return false }
            switch field {
            case "notificationUUID": check.equal(n.notificationUUID, value.text, context)
            case "rawNotificationType": check.equal(n.notificationType, value.text, context)
            case "rawSubtype": check.equal(n.subtype, value.text, context)
            case "version": check.equal(n.version, value.text, context)
            case "signedDate": check.instant(n.signedDate, value.millisecondsDate, context)
            default: return false
            }
        case "body.data":
            guard let n = decoded.notification else { return false }
            switch field {
            case "appAppleId": check.equal(n.appAppleID, value.int64, context)
            case "bundleId": check.equal(n.bundleID, value.text, context)
            case "bundleVersion": check.equal(n.bundleVersion, value.text, context)
            case "rawStatus": check.equal(n.subscriptionStatus.map(Int64.init), value.int64, context)
            case "rawEnvironment": check.equal(decoded.rawEnvironment, value.text, context)
            case "rawConsumptionRequestReason": check.equal(n.consumptionRequestReason, value.text, context)
            case "signedTransactionInfo", "signedRenewalInfo": break  // `<JWS:sha256>` placeholders
            default: return false
            }
        case "tx_info":
            guard let p = decoded.nested.first(where: { $0.field == "data.signedTransactionInfo" })?.input.transactions.first else {
                return false
            }
            let strings: [String: KeyPath<Purchase, String?>] = [
                "bundleId": \.bundleID, "currency": \.currency, "originalTransactionId": \.originalTransactionID,
                "rawEnvironment": \.environment, "rawInAppOwnershipType": \.inAppOwnershipType,
                "rawTransactionReason": \.transactionReason, "storefront": \.storefront, "storefrontId": \.storefrontID,
                "subscriptionGroupIdentifier": \.subscriptionGroupIdentifier, "transactionId": \.transactionID,
                "webOrderLineItemId": \.webOrderLineItemID, "offerIdentifier": \.offerIdentifier,
                "rawOfferDiscountType": \.offerDiscountType, "appAccountToken": \.appAccountToken,
                "rawRevocationType": \.revocationType,
            ]
            let dates: [String: KeyPath<Purchase, Date?>] = [
                "expiresDate": \.expiresDate, "originalPurchaseDate": \.originalPurchaseDate, "purchaseDate": \.purchaseDate,
                "signedDate": \.signedDate, "revocationDate": \.cancellationDate,
            ]
            if let path = strings[field] {
                check.equal(p[keyPath: path], value.text, context)
            } else if let path = dates[field] {
                check.instant(p[keyPath: path], value.millisecondsDate, context)
            } else {
                switch field {
                case "price": check.equal(p.priceMilliunits, value.int64, context)
                case "quantity": check.equal(p.quantity.map(Int64.init), value.int64, context)
                case "rawType": check.equal(p.productType?.rawValue, value.text, context)
                case "rawOfferType": check.equal(p.offerType.map(Int64.init), value.int64, context)
                case "rawRevocationReason": check.equal(p.cancellationReason.map(Int64.init), value.int64, context)
                case "appTransactionId": check.equal(p.appTransactionID, value.text, context)
                default: return false
                }
            }
        default:
            return false
        }
        return true
    }
}
