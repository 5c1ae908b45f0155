import Foundation
import Testing
@testable import ReceiptRendering
@testable import ReceiptCore
@testable import ReceiptTrust

/// Decoding each format from the fixtures, with expected values taken from the sources' own
/// tests (the corpus sidecars), not from this decoder's output.
@Suite struct ReceiptDecoderTests {
    let decoder = ReceiptDecoder()

    /// IdeasOnCanvas/AppReceiptValidator's expectations for this receipt
    /// (Fixtures/sandbox-2023.expected.txt).
    @Test func pkcs7SandboxReceiptMatchesItsSidecar() throws {
        let decoded = try decoder.decode(try Fixture.bytes("sandbox-2023.der"))
        #expect(decoded.format == .pkcs7)
        #expect(decoded.wrapping == ["binary"])
        let r = try #require(decoded.receipt)
        #expect(r.bundleID == "com.hannesoid.PurchasingExperiments")
        #expect(r.bundleIDData == Array(Data(base64Encoded: "DCNjb20uaGFubmVzb2lkLlB1cmNoYXNpbmdFeHBlcmltZW50cw==")!))
        #expect(r.applicationVersion == "1")
        #expect(r.opaqueValue == Array(Data(base64Encoded: "CPYuy3sssm2OQks5Dfav1Q==")!))
        #expect(r.sha1Hash == Array(Data(base64Encoded: "gfxUPQjdI7OUJFRcSX7Hl/98JpI=")!))
        #expect(r.originalApplicationVersion == "1.0")
        #expect(r.receiptCreationDate == utc("2023-02-22T14:30:15Z"))
        #expect(r.expirationDate == nil)
        #expect(r.inApp.count == 2)
        // The receipt lists purchases in its own order; find them by product.
        let oneTime = try #require(r.inApp.first { $0.productID == "com.hannesoid.PurchasingExperiments.oneTime" })
        #expect(oneTime.quantity == 1)
        #expect(oneTime.transactionID == "2000000284164152")
        #expect(oneTime.originalTransactionID == "2000000284164152")
        #expect(oneTime.purchaseDate == utc("2023-02-22T14:29:20Z"))
        #expect(oneTime.originalPurchaseDate == utc("2023-02-22T14:29:20Z"))
        #expect(oneTime.expiresDate == nil)
        #expect(oneTime.cancellationDate == nil)
        #expect(oneTime.webOrderLineItemID == nil || oneTime.webOrderLineItemID == "0")
        let sub = try #require(r.inApp.first { $0.productID == "com.hannesoid.PurchasingExperiments.subscription1" })
        #expect(sub.transactionID == "2000000284164527")
        #expect(sub.originalTransactionID == "2000000284164527")
        #expect(sub.purchaseDate == utc("2023-02-22T14:29:39Z"))
        #expect(sub.originalPurchaseDate == utc("2023-02-22T14:29:44Z"))
        #expect(sub.expiresDate == utc("2023-02-22T14:34:39Z"))
        #expect(sub.webOrderLineItemID == "2000000021470597")
        #expect(decoded.environment == .sandbox)
        guard case .pkcs7(let signed) = decoded.signature else { Issue.record("no PKCS#7 material"); return }
        #expect(signed.certificates.count == 3)
        #expect(signed.signerInfos.count == 1)
    }

    /// Manifest: production receipt, bundle org.getpure.pure-iphone, app version 15741,
    /// original 434, created 2024-02-23T17:27:16Z, 4 purchases of .Month and .Week, SHA-256.
    @Test func pkcs7ProductionReceiptFromBase64() throws {
        let decoded = try decoder.decode(try Fixture.bytes("production.b64"))
        #expect(decoded.format == .pkcs7)
        #expect(decoded.wrapping == ["base64"])
        #expect(decoded.environment == .production)
        let r = try #require(decoded.receipt)
        #expect(r.receiptType == "Production")
        #expect(r.bundleID == "org.getpure.pure-iphone")
        #expect(r.applicationVersion == "15741")
        #expect(r.originalApplicationVersion == "434")
        #expect(r.receiptCreationDate == utc("2024-02-23T17:27:16Z"))
        #expect(r.originalPurchaseDate == utc("2016-08-16T15:15:43Z"))
        #expect(r.inApp.count == 4)
        #expect(Set(r.inApp.compactMap(\.productID)) == ["org.getpure.pure.Month", "org.getpure.pure.Week"])
        #expect(SignatureSummary(decoded.signature!).algorithm == "sha256")
        // Undocumented attributes are kept with their type and raw bytes, not dropped.
        #expect(!r.unknownAttributes.isEmpty)
        #expect(r.unknownAttributes.allSatisfy { ![0, 1, 2, 3, 4, 5, 12, 17, 18, 19].contains($0.type) })
    }

    /// TPInAppReceipt: Xcode receipt with one StoreKit certificate, indefinite-length BER;
    /// manifest: bundle net.zachariadis.cyclemaps, version 31.10.0, created
    /// 2020-07-22T18:33:15+0100, expires 4001-01-01, product CYCLEMAPS_PREMIUM.
    @Test func xcodeReceiptWithIndefiniteLengths() throws {
        let decoded = try decoder.decode(try Fixture.bytes("xcode.der"))
        #expect(decoded.environment == .xcode)
        let r = try #require(decoded.receipt)
        #expect(r.receiptType == "Xcode")
        #expect(r.bundleID == "net.zachariadis.cyclemaps")
        #expect(r.applicationVersion == "31.10.0")
        #expect(r.receiptCreationDate == utc("2020-07-22T18:33:15+0100"))
        #expect(r.expirationDate == utc("4001-01-01T00:00:00Z"))
        #expect(r.inApp.map(\.productID) == ["CYCLEMAPS_PREMIUM"])
        guard case .pkcs7(let signed) = decoded.signature else { Issue.record("no PKCS#7 material"); return }
        #expect(signed.usesIndefiniteLengths)
        #expect(signed.certificates.count == 1)
        #expect(SignatureSummary(decoded.signature!).certificates.first?.commonName == "StoreKit")
    }

    /// The mindmob sandbox transaction receipt; values from its purchase-info plist sidecar.
    @Test func legacyTransactionReceipt() throws {
        let decoded = try decoder.decode(try Fixture.bytes("legacy-sandbox.b64"))
        #expect(decoded.format == .legacy)
        #expect(decoded.rawEnvironment == "Sandbox")
        #expect(decoded.legacyEnvelope.first { $0.name == "pod" }?.value == "100")
        let p = try #require(decoded.transactions.first)
        #expect(p.source == .purchaseInfo)
        #expect(p.transactionID == "1000000046178817")
        #expect(p.originalTransactionID == "1000000046178817")
        #expect(p.productID == "com.mindmobapp.download")
        #expect(p.bundleID == "com.mindmobapp.MindMob")
        #expect(p.bundleVersion == "20120427")
        #expect(p.quantity == 1)
        #expect(p.purchaseDate?.timeIntervalSince1970 == 1_335_798_355.868)
        #expect(p.otherFields.contains(Field(name: "item_id", value: "521129812")))
        guard case .legacy(let blob, let info) = decoded.signature else { Issue.record("no signature"); return }
        let parsed = try #require(LegacySignatureBlob(blob))
        #expect(parsed.version == 2)
        #expect(parsed.signature.count == 128)
        #expect(info.first == UInt8(ascii: "{"))
        #expect(SignatureSummary(decoded.signature!).certificates.first?.commonName == "PurchaseReceiptCertificate")
    }

    /// aporat's verifyReceipt fixture: status 0, Sandbox, com.myapp, 2 in_app, 2
    /// latest_receipt_info, 1 pending_renewal_info; ids are JSON numbers in this file.
    @Test func verifyReceiptResponse() throws {
        let decoded = try decoder.decode(try Fixture.bytes("verify-response.json"))
        #expect(decoded.format == .verifyResponse)
        #expect(decoded.status == 0)
        #expect(decoded.environment == .sandbox)
        #expect(decoded.receipt?.bundleID == "com.myapp")
        #expect(decoded.receipt?.inApp.count == 2)
        #expect(decoded.receipt?.inApp.first?.productID == "myapp.1")
        #expect(decoded.latestReceiptInfo.count == 2)
        #expect(decoded.latestReceiptInfo[0].transactionID == "1000000104232856")
        #expect(decoded.latestReceiptInfo[0].expiresDate?.timeIntervalSince1970 == 1_394_619_485)
        #expect(decoded.latestReceiptInfo[1].purchaseDate?.timeIntervalSince1970 == 1_396_071_456.569)
        #expect(decoded.receipt?.requestDate?.timeIntervalSince1970 == 1_432_485_078.143)
        #expect(decoded.pendingRenewalInfo.count == 1)
    }

    /// An iOS 6 auto-renewable response: `receipt` and `latest_receipt_info` are flat
    /// dictionaries, `expires_date` is epoch milliseconds.
    @Test func iOS6StyleResponse() throws {
        let decoded = try decoder.decode(try Fixture.bytes("ios6-response.json"))
        #expect(decoded.format == .verifyResponse)
        #expect(decoded.status == 0)
        #expect(decoded.receipt == nil)
        let t = try #require(decoded.transactions.first)
        #expect(t.source == .legacyResponse)
        #expect(t.bundleID == "com.example.001")
        #expect(t.productID == "com.example.premium.1y")
        #expect(t.expiresDate?.timeIntervalSince1970 == 1_354_436_154)
        #expect(decoded.latestReceiptInfo.count == 1)
        #expect(decoded.latestReceiptInfo[0].transactionID == "1000000059630000")
    }

    /// aporat's V1 DID_RENEW: the shared secret in `password` is never kept or shown.
    @Test func notificationV1HidesThePassword() throws {
        let bytes = try Fixture.bytes("notification-v1.json")
        let decoded = try decoder.decode(bytes)
        #expect(decoded.format == .notificationV1)
        #expect(decoded.notification?.notificationType == "DID_RENEW")
        #expect(decoded.notification?.bundleID == "my.app")
        #expect(decoded.notification?.bundleVersion == "1.0.0")
        #expect(decoded.notification?.containedSharedSecret == true)
        #expect(decoded.rawEnvironment == "PROD")
        #expect(decoded.environment == .production)
        #expect(decoded.pendingRenewalInfo.first?.autoRenewProductID == "my.app.subscription.monthly")
        #expect(decoded.pendingRenewalInfo.first?.autoRenewStatus == true)
        let json = InspectJSON.encode(InspectJSON.object(for: decoded))
        let text = TextSummary.render(decoded)
        #expect(!json.contains("dummy_shared_secret"))
        #expect(!text.contains("dummy_shared_secret"))
        #expect(!"\(decoded)".contains("dummy_shared_secret"))
    }

    /// session-pro DID_RENEW (manifest + decoded sidecar): nested transaction and renewal info.
    @Test func notificationV2WithNestedTokens() throws {
        let decoded = try decoder.decode(try Fixture.bytes("notification-v2.jws"))
        #expect(decoded.format == .jwsNotification)
        let n = try #require(decoded.notification)
        #expect(n.notificationType == "DID_RENEW")
        #expect(n.notificationUUID == "1a7cdc3d-9360-49c3-ae37-0423e4c6e7c7")
        #expect(n.signedDate?.timeIntervalSince1970 == 1_759_302_518.835)
        #expect(n.appAppleID == 1_470_168_868)
        #expect(n.bundleID == "com.loki-project.loki-messenger")
        #expect(n.subscriptionStatus == 1)
        #expect(decoded.environment == .sandbox)
        #expect(decoded.nested.map(\.field) == ["data.signedTransactionInfo", "data.signedRenewalInfo"])
        #expect(decoded.nested.map(\.input.format) == [.jwsTransaction, .jwsRenewal])
        let t = try #require(decoded.transactions.first)
        #expect(t.transactionID == "2000001024998954")
        #expect(t.originalTransactionID == "2000001024993299")
        #expect(t.productID == "com.getsession.org.pro_sub")
        #expect(t.productType == .autoRenewable)
        #expect(t.expiresDate?.timeIntervalSince1970 == 1_759_302_732)
        #expect(t.priceMilliunits == 1990)
        #expect(t.currency == "AUD")
        #expect(t.transactionReason == "RENEWAL")
        let r = try #require(decoded.pendingRenewalInfo.first)
        #expect(r.autoRenewStatus == true)
        #expect(r.autoRenewProductID == "com.getsession.org.pro_sub")
        #expect(r.renewalDate?.timeIntervalSince1970 == 1_759_302_732)
        guard case .jws(let token) = decoded.signature else { Issue.record("no JWS material"); return }
        #expect(token.algorithm == "ES256")
        #expect(token.certificateChain.count == 3)
        #expect(token.signature.count == 64)
    }

    /// Apple's library test: Xcode AppTransaction, bundle com.example.naturelab.backyardbirds.example,
    /// applicationVersion "1", originalPurchaseDate -62135769600 (year 1), receiptType Xcode.
    @Test func appTransaction() throws {
        let decoded = try decoder.decode(try Fixture.bytes("xcode-app-transaction.jws"))
        #expect(decoded.format == .jwsAppTransaction)
        let r = try #require(decoded.receipt)
        #expect(r.bundleID == "com.example.naturelab.backyardbirds.example")
        #expect(r.applicationVersion == "1")
        #expect(r.originalApplicationVersion == "1")
        #expect(r.receiptType == "Xcode")
        #expect(r.originalPurchaseDate?.timeIntervalSince1970 == -62_135_769_600)
        #expect(r.deviceVerificationNonce == "48c8b92d-ce0d-4229-bedf-e61b4f9cfc92")
        #expect(decoded.environment == .xcode)
    }
}
