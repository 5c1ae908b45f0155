import APITestSupport
import AppStoreAPI
import Crypto
import Foundation
import ReceiptCore
import Testing
import TestSupport

/// Offer signatures as Apple documents them, checked by the test's own reading (the signed text
/// rebuilt by hand, the JWS split and verified with swift-crypto), with the instant and the
/// nonce given so every value is exact.
@Suite struct OfferSignatureTests {
    static let nonce = UUID(uuidString: "3F2B9C4E-8A1D-4E6F-9B0A-1C2D3E4F5A6B")!
    static let lowerNonce = "3f2b9c4e-8a1d-4e6f-9b0a-1c2d3e4f5a6b"
    /// 2027-01-15T08:00:00.123Z, with a fraction of a millisecond that is cut off.
    static let instant = Date(timeIntervalSince1970: 1_800_000_000.1234)

    @Test func versionOneSignsApplesSevenFieldsJoinedByInvisibleSeparators() throws {
        let (credentials, key) = makeTestCredentials()
        let offer = try OfferSigner(credentials).promotional(
            productID: "pro.monthly", offerID: "WINBACK1", applicationUsername: "Mixed-Case-User", nonce: Self.nonce, at: Self.instant)
        #expect(offer.timestamp == 1_800_000_000_123)
        #expect(offer.applicationUsername == "mixed-case-user")
        #expect(offer.nonceText == Self.lowerNonce)
        #expect(offer.keyID == "2X9R4HXF34")
        #expect(offer.bundleID == "com.example.app")
        #expect(offer.validUntil == Date(timeIntervalSince1970: 1_800_086_400.123))

        // Apple's order: bundle id, key id, product id, offer id, username and nonce lowercased, ms.
        let expected =
            "com.example.app\u{2063}2X9R4HXF34\u{2063}pro.monthly\u{2063}WINBACK1\u{2063}mixed-case-user\u{2063}"
            + "3f2b9c4e-8a1d-4e6f-9b0a-1c2d3e4f5a6b\u{2063}1800000000123"
        #expect(offer.signedText == expected)
        let der = try #require(Data(base64Encoded: offer.signature))
        let signature = try P256.Signing.ECDSASignature(derRepresentation: der)
        #expect(signature.derRepresentation == der, "DER, as Apple's library encodes it")
        #expect(key.publicKey.isValidSignature(signature, for: Data(expected.utf8)))
        #expect(key.publicKey.isValidSignature(signature, for: SHA256.hash(data: Data(expected.utf8))), "ECDSA over SHA-256")
        // Anything else signed, or another key, does not verify.
        #expect(!key.publicKey.isValidSignature(signature, for: Data(expected.replacingOccurrences(of: "mixed-case-user", with: "Mixed-Case-User").utf8)))
        #expect(!key.publicKey.isValidSignature(signature, for: Data(expected.replacingOccurrences(of: "\u{2063}", with: "").utf8)))
        #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(signature, for: Data(expected.utf8)))
    }

    @Test func versionOneTakesAnEmptyApplicationUsername() throws {
        let (credentials, key) = makeTestCredentials()
        let offer = try OfferSigner(credentials).promotional(
            productID: "pro.monthly", offerID: "WINBACK1", applicationUsername: "", nonce: Self.nonce, at: Self.instant)
        let expected = "com.example.app\u{2063}2X9R4HXF34\u{2063}pro.monthly\u{2063}WINBACK1\u{2063}\u{2063}\(Self.lowerNonce)\u{2063}1800000000123"
        let signature = try P256.Signing.ECDSASignature(derRepresentation: try #require(Data(base64Encoded: offer.signature)))
        #expect(key.publicKey.isValidSignature(signature, for: Data(expected.utf8)))
    }

    @Test func promotionalJWSHeaderAndClaims() throws {
        let (credentials, key) = makeTestCredentials()
        let signer = OfferSigner(credentials)
        let signed = try signer.promotionalJWS(
            productID: "pro.monthly", offerID: "WINBACK1", transactionID: "2000000123456789", nonce: Self.nonce, at: Self.instant)
        #expect(signed.kind == .promotional)
        #expect(signed.issuedAt == 1_800_000_000)
        let jwt = try DecodedJWT(signed.compact)
        #expect(jwt.headerJSON == #"{"alg":"ES256","kid":"2X9R4HXF34","typ":"JWT"}"#)
        #expect(
            jwt.claims
                == .object([
                    "iss": .string("57246542-96fe-1a63-e053-0824d011072a"), "bid": .string("com.example.app"),
                    "aud": .string("promotional-offer"), "iat": .integer(1_800_000_000), "nonce": .string(Self.lowerNonce),
                    "productId": .string("pro.monthly"), "offerIdentifier": .string("WINBACK1"), "transactionId": .string("2000000123456789"),
                ]))
        #expect(jwt.signature.count == 64)
        #expect(jwt.verifies(with: key.publicKey))
        #expect(!jwt.verifies(with: P256.Signing.PrivateKey().publicKey))

        // Without a transaction id the claim is left out, not null.
        let bare = try DecodedJWT(
            try signer.promotionalJWS(productID: "pro.monthly", offerID: "WINBACK1", transactionID: nil, nonce: Self.nonce, at: Self.instant)
                .compact)
        #expect(bare.claims["transactionId"] == nil)
        #expect(bare.claims.object?.keys.sorted() == ["aud", "bid", "iat", "iss", "nonce", "offerIdentifier", "productId"])
        #expect(bare.verifies(with: key.publicKey))
    }

    @Test func introductoryEligibilityHeaderAndClaims() throws {
        let (credentials, key) = makeTestCredentials()
        let signer = OfferSigner(credentials)
        for allow in [false, true] {
            let signed = try signer.introductoryEligibility(
                productID: "pro.monthly", allowIntroductoryOffer: allow, transactionID: "704289572311094157", nonce: Self.nonce, at: Self.instant)
            #expect(signed.kind == .introductoryEligibility)
            #expect(signed.allowIntroductoryOffer == allow)
            let jwt = try DecodedJWT(signed.compact)
            #expect(jwt.headerJSON == #"{"alg":"ES256","kid":"2X9R4HXF34","typ":"JWT"}"#)
            #expect(
                jwt.claims
                    == .object([
                        "iss": .string("57246542-96fe-1a63-e053-0824d011072a"), "bid": .string("com.example.app"),
                        "aud": .string("introductory-offer-eligibility"), "iat": .integer(1_800_000_000), "nonce": .string(Self.lowerNonce),
                        "productId": .string("pro.monthly"), "allowIntroductoryOffer": .bool(allow), "transactionId": .string("704289572311094157"),
                    ]))
            #expect(jwt.verifies(with: key.publicKey))
        }
    }

    @Test func theAPITokenIsStillTheSameJWT() throws {
        // The bearer token and the offer JWS share one signer: its header did not change.
        let (credentials, key) = makeTestCredentials()
        let token = try DecodedJWT(try APIToken.mint(credentials, now: Self.instant))
        #expect(token.headerJSON == #"{"alg":"ES256","kid":"2X9R4HXF34","typ":"JWT"}"#)
        #expect(token.claims["aud"] == .string("appstoreconnect-v1"))
        #expect(token.verifies(with: key.publicKey))
    }

    @Test(arguments: [
        ("", OfferSignatureError.Code.invalidProductID),
        ("   ", .invalidProductID),
        ("pro\tmonthly", .invalidProductID),
        ("pro\u{2063}monthly", .invalidProductID),
        ("pro\u{200B}monthly", .invalidProductID),
        (String(repeating: "p", count: 257), .invalidProductID),
    ])
    func productIDsAppleCouldNotHaveAreRefused(_ productID: String, _ code: OfferSignatureError.Code) throws {
        let (credentials, _) = makeTestCredentials()
        let signer = OfferSigner(credentials)
        #expect(throws: OfferSignatureError(code, "")) {
            try signer.promotional(productID: productID, offerID: "A", applicationUsername: "", nonce: Self.nonce, at: Self.instant)
        }
        #expect(throws: OfferSignatureError(code, "")) {
            try signer.promotionalJWS(productID: productID, offerID: "A", transactionID: nil, nonce: Self.nonce, at: Self.instant)
        }
        #expect(throws: OfferSignatureError(code, "")) {
            try signer.introductoryEligibility(
                productID: productID, allowIntroductoryOffer: true, transactionID: "1", nonce: Self.nonce, at: Self.instant)
        }
        #expect(try OfferValues.productID(String(repeating: "p", count: 256)).count == 256)
    }

    @Test func eachValueHasItsOwnCode() throws {
        let (credentials, _) = makeTestCredentials()
        let signer = OfferSigner(credentials)
        /// The code `body` fails with; nil when it does not (another error type: not a code).
        func code(_ body: () throws -> Void) -> OfferSignatureError.Code? {
            do {
                try body()
                return nil
            } catch {
                return (error as? OfferSignatureError)?.code
            }
        }
        #expect(code { _ = try OfferValues.offerID("") } == .invalidOfferID)
        #expect(code { _ = try OfferValues.offerID("WIN\nBACK") } == .invalidOfferID)
        #expect(code { _ = try OfferValues.applicationUsername("user\u{0}") } == .invalidApplicationUsername)
        #expect(code { _ = try OfferValues.applicationUsername(String(repeating: "u", count: 257)) } == .invalidApplicationUsername)
        #expect(code { _ = try OfferValues.applicationUsername("") } == nil)
        for nonce in ["", "not-a-uuid", "{3F2B9C4E-8A1D-4E6F-9B0A-1C2D3E4F5A6B}", "3f2b9c4e8a1d4e6f9b0a1c2d3e4f5a6b", " 3f2b9c4e-8a1d-4e6f-9b0a-1c2d3e4f5a6b"] {
            #expect(code { _ = try OfferValues.nonce(nonce) } == .invalidNonce, "\(nonce)")
        }
        #expect(try OfferValues.nonce(Self.lowerNonce) == Self.nonce)
        for id in ["", "12a", "-1", "1 2", "１２", String(repeating: "9", count: 33)] {
            #expect(code { _ = try OfferValues.transactionID(id) } == .invalidTransactionID, "\(id)")
        }
        #expect(code {
            _ = try signer.promotionalJWS(productID: "p", offerID: "o", transactionID: "0x12", nonce: Self.nonce, at: Self.instant)
        } == .invalidTransactionID)
        #expect(code {
            _ = try signer.promotional(
                productID: "p", offerID: "o", applicationUsername: "", nonce: Self.nonce, at: Date(timeIntervalSince1970: -1))
        } == .invalidTimestamp)
    }

    @Test func messagesSayWhatToFixAndQuoteSafely() {
        let words = Wording("offer-signature")
        do {
            _ = try OfferValues.nonce("nope\u{1B}]0;x")
            Issue.record("took a nonce that is no UUID")
        } catch {
            words.said(error.reason)
        }
        do {
            _ = try OfferValues.transactionID("12a")
            Issue.record("took a transaction id that is not digits")
        } catch {
            words.said(error.reason)
        }
        words.check()
    }
}
