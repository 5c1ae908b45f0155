import APITestSupport
import AppStoreAPI
import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import ReceiptCore
import ReceiptRendering
import ReceiptSimulator
import ServiceTestSupport
import Testing
import TestSupport

/// The simulator's `POST /offers/verify` takes what `OfferSigner` makes (in the JSON
/// `offer-signature --format json` prints) and refuses, with its exact reason code, what the
/// App Store would refuse: a tampered field, another key, another key id, another app, another
/// audience, a version 1 signature past its 24 hours.
@Suite struct OfferVerificationTests {
    static let nonce = UUID(uuidString: "3f2b9c4e-8a1d-4e6f-9b0a-1c2d3e4f5a6b")!
    static let bundleID = ServerAPIData.demoBundleID

    /// A service on a test clock (now: `TestTime.start`), checking against `key`'s public half
    /// and key id 2X9R4HXF34; the signer for the demo app.
    struct Setup {
        let service: ServerAPIService
        let signer: OfferSigner
        let key: P256.Signing.PrivateKey

        init(publicKey: P256.Signing.PublicKey?? = .none, keyID: String? = "2X9R4HXF34") throws {
            let (credentials, key) = makeTestCredentials(bundleID: OfferVerificationTests.bundleID)
            var configuration = ServerAPIConfiguration(publicKey: publicKey ?? key.publicKey, clock: TestTime().clock)
            configuration.keyID = keyID
            service = try ServerAPIService(configuration)
            signer = OfferSigner(credentials)
            self.key = key
        }

        /// POSTs `body` to /offers/verify: the status and the answer.
        func post(_ body: String, method: String = "POST", bodyTooLarge: Bool = false) -> (Int, JSONValue) {
            let reply = service.answer(
                ServerAPIRequest(method: method, uri: "/offers/verify", authorization: nil, body: Array(body.utf8), bodyTooLarge: bodyTooLarge))
            return (reply.status, reply.json ?? .null)
        }

        /// The reason of a refusal (nil when valid).
        func reason(_ body: String) -> String? {
            let (_, answer) = post(body)
            return answer["valid"] == .bool(true) ? nil : answer["reason"]?.text ?? "no reason"
        }

        func promotional(at instant: Date = TestTime.start, productID: String = "pro.monthly") throws -> PromotionalOfferSignature {
            try signer.promotional(
                productID: productID, offerID: "WINBACK1", applicationUsername: "User-1", nonce: OfferVerificationTests.nonce, at: instant)
        }
    }

    /// `json` with `key` set to `value` (a JSON literal).
    static func replacing(_ json: String, _ key: String, _ value: JSONValue) throws -> String {
        guard case .object(var fields) = try JSONValue.parse(Array(json.utf8)) else { throw ShapeError() }
        fields[key] = value
        return JSONValue.object(fields).compactJSON
    }

    struct ShapeError: Error {}

    @Test func aVersionOneSignatureIsValidWithWhatWasSigned() throws {
        let setup = try Setup()
        let (status, answer) = setup.post(OfferSignatureRendering.json(try setup.promotional()))
        #expect(status == 200)
        #expect(
            answer
                == .object([
                    "valid": .bool(true), "type": .string("promotional"), "bundle_id": .string("com.example.receiptdash"),
                    "key_id": .string("2X9R4HXF34"), "product_id": .string("pro.monthly"), "offer_id": .string("WINBACK1"),
                    "application_username": .string("user-1"), "nonce": .string("3f2b9c4e-8a1d-4e6f-9b0a-1c2d3e4f5a6b"),
                    "timestamp": .integer(1_800_000_000_000), "valid_until": .string("2027-01-16T08:00:00Z"),
                ]))
    }

    @Test func versionOneRefusalsHaveTheirCodes() throws {
        let setup = try Setup()
        let good = OfferSignatureRendering.json(try setup.promotional())
        #expect(setup.reason(good) == nil)
        // A signed field changed after signing.
        #expect(setup.reason(try Self.replacing(good, "offer_id", .string("WINBACK2"))) == "bad_signature")
        #expect(setup.reason(try Self.replacing(good, "timestamp", .integer(1_800_000_000_001))) == "bad_signature")
        #expect(setup.reason(try Self.replacing(good, "application_username", .string("user-2"))) == "bad_signature")
        // The username is compared lowercased, as it is signed.
        #expect(setup.reason(try Self.replacing(good, "application_username", .string("USER-1"))) == nil)
        // Another key with the same key id: the signature does not verify.
        let (_, other) = makeTestCredentials(bundleID: Self.bundleID)
        let otherSigner = OfferSigner(
            APICredentials(issuerID: "i", keyID: "2X9R4HXF34", privateKey: APIPrivateKey(other), bundleID: Self.bundleID))
        let foreign = try otherSigner.promotional(
            productID: "pro.monthly", offerID: "WINBACK1", applicationUsername: "", nonce: Self.nonce, at: TestTime.start)
        #expect(setup.reason(OfferSignatureRendering.json(foreign)) == "bad_signature")
        // Another key id.
        #expect(setup.reason(try Self.replacing(good, "key_id", .string("OTHERKEY01"))) == "unknown_key")
        // Another app.
        #expect(setup.reason(try Self.replacing(good, "bundle_id", .string("com.example.other"))) == "wrong_bundle")
    }

    @Test func versionOneLastsTwentyFourHoursByTheSimulatorsClock() throws {
        let setup = try Setup()
        let day = PromotionalOfferSignature.validity
        #expect(day == 86_400)
        #expect(setup.reason(OfferSignatureRendering.json(try setup.promotional(at: TestTime.start.addingTimeInterval(-day)))) == nil)
        let stale = OfferSignatureRendering.json(try setup.promotional(at: TestTime.start.addingTimeInterval(-day - 1)))
        let (status, answer) = setup.post(stale)
        #expect(status == 200)
        #expect(answer["valid"] == .bool(false))
        #expect(answer["reason"] == .string("expired"))
        #expect(answer["message"]?.text?.contains("2027-01-15T07:59:59Z") == true)
    }

    @Test func jwsFormsAreValidWithTheirClaims() throws {
        let setup = try Setup()
        let promotional = try setup.signer.promotionalJWS(
            productID: "pro.monthly", offerID: "WINBACK1", transactionID: "2000000900000001", nonce: Self.nonce, at: TestTime.start)
        let (status, answer) = setup.post(OfferSignatureRendering.json(promotional))
        #expect(status == 200)
        #expect(answer["valid"] == .bool(true))
        #expect(answer["type"] == .string("promotional-jws"))
        #expect(answer["key_id"] == .string("2X9R4HXF34"))
        #expect(
            answer["claims"]
                == .object([
                    "iss": .string("57246542-96fe-1a63-e053-0824d011072a"), "bid": .string("com.example.receiptdash"),
                    "aud": .string("promotional-offer"), "iat": .integer(1_800_000_000), "nonce": .string("3f2b9c4e-8a1d-4e6f-9b0a-1c2d3e4f5a6b"),
                    "productId": .string("pro.monthly"), "offerIdentifier": .string("WINBACK1"), "transactionId": .string("2000000900000001"),
                ]))
        let eligibility = try setup.signer.introductoryEligibility(
            productID: "pro.monthly", allowIntroductoryOffer: false, transactionID: "2000000900000001", nonce: Self.nonce, at: TestTime.start)
        let (_, eligible) = setup.post(OfferSignatureRendering.json(eligibility))
        #expect(eligible["valid"] == .bool(true))
        #expect(eligible["type"] == .string("introductory-eligibility"))
        #expect(eligible["claims"]?["allowIntroductoryOffer"] == .bool(false))
        // A bare {"jws": …} is taken as either kind.
        #expect(setup.reason(JSONValue.object(["jws": .string(eligibility.compact)]).compactJSON) == nil)
    }

    @Test func jwsRefusalsHaveTheirCodes() throws {
        let setup = try Setup()
        let eligibility = try setup.signer.introductoryEligibility(
            productID: "pro.monthly", allowIntroductoryOffer: true, transactionID: "2000000900000001", nonce: Self.nonce, at: TestTime.start)
        func body(_ jws: String, type: String? = nil) -> String {
            var fields: [String: JSONValue] = ["jws": .string(jws)]
            if let type { fields["type"] = .string(type) }
            return JSONValue.object(fields).compactJSON
        }
        // An eligibility JWS where a promotional offer is asked for.
        #expect(setup.reason(body(eligibility.compact, type: "promotional-jws")) == "wrong_audience")
        #expect(setup.reason(body(eligibility.compact, type: "introductory-eligibility")) == nil)
        // The API's bearer token, signed by the same key: no offer's audience.
        #expect(setup.reason(body(try APIToken.mint(setup.signer.credentials, now: TestTime.start))) == "wrong_audience")
        // A claim changed after signing: the claims part re-encoded.
        let parts = eligibility.compact.split(separator: ".").map(String.init)
        var claims = try #require(try DecodedJWT(eligibility.compact).claims.object)
        claims["allowIntroductoryOffer"] = .bool(false)
        let tampered = [parts[0], Base64Text.encodeURL(Array(JSONValue.object(claims).compactJSON.utf8)), parts[2]].joined(separator: ".")
        #expect(setup.reason(body(tampered)) == "bad_signature")
        // A signature cut short.
        #expect(setup.reason(body(String(eligibility.compact.dropLast(4)))) == "bad_signature")
        // Another key, same key id.
        let other = OfferSigner(
            APICredentials(
                issuerID: "i", keyID: "2X9R4HXF34", privateKey: APIPrivateKey(P256.Signing.PrivateKey()), bundleID: Self.bundleID))
        let foreign = try other.promotionalJWS(productID: "p", offerID: "o", transactionID: nil, nonce: Self.nonce, at: TestTime.start)
        #expect(setup.reason(OfferSignatureRendering.json(foreign)) == "bad_signature")
        // Another key id, another app.
        let renamed = OfferSigner(
            APICredentials(issuerID: "i", keyID: "OTHERKEY01", privateKey: APIPrivateKey(setup.key), bundleID: Self.bundleID))
        #expect(setup.reason(OfferSignatureRendering.json(try renamed.promotionalJWS(productID: "p", offerID: "o", transactionID: nil, nonce: Self.nonce, at: TestTime.start))) == "unknown_key")
        let elsewhere = OfferSigner(
            APICredentials(issuerID: "i", keyID: "2X9R4HXF34", privateKey: APIPrivateKey(setup.key), bundleID: "com.example.other"))
        #expect(setup.reason(OfferSignatureRendering.json(try elsewhere.promotionalJWS(productID: "p", offerID: "o", transactionID: nil, nonce: Self.nonce, at: TestTime.start))) == "wrong_bundle")
    }

    @Test func requestsThatCannotBeReadAre4xx() throws {
        let setup = try Setup()
        let good = OfferSignatureRendering.json(try setup.promotional())
        func expectRefused(_ body: String, _ status: Int, _ reason: String, method: String = "POST", bodyTooLarge: Bool = false) {
            let (got, answer) = setup.post(body, method: method, bodyTooLarge: bodyTooLarge)
            #expect(got == status, "\(body.prefix(80))")
            #expect(answer["valid"] == .bool(false))
            #expect(answer["reason"] == .string(reason), "\(body.prefix(80))")
        }
        expectRefused("{{", 400, "malformed")
        expectRefused("[]", 400, "malformed")
        expectRefused(String(repeating: "[", count: 10_000), 400, "malformed")
        expectRefused(try Self.replacing(good, "nonce", .string("not-a-uuid")), 400, "malformed")
        expectRefused(try Self.replacing(good, "timestamp", .string("1800000000000")), 400, "malformed")
        expectRefused(try Self.replacing(good, "signature", .string("%%%")), 400, "malformed")
        expectRefused(try Self.replacing(good, "type", .string("promotional-v3")), 400, "malformed")
        expectRefused(#"{"type":"promotional"}"#, 400, "malformed")
        expectRefused(#"{"jws":"a.b"}"#, 400, "malformed")
        expectRefused(#"{"jws":"e30.e30.AAAA","type":"promotional"}"#, 400, "malformed")
        expectRefused(String(repeating: " ", count: OfferVerifier.maximumBodyBytes + 1), 413, "too_large")
        expectRefused(good, 413, "too_large", bodyTooLarge: true)
        expectRefused(good, 405, "method_not_allowed", method: "GET")
        // Over the bound, a valid body is still refused before it is read.
        expectRefused(good + String(repeating: " ", count: OfferVerifier.maximumBodyBytes), 413, "too_large")
    }

    @Test func aSimulatorWithoutAKeyKnowsNoKey() throws {
        let setup = try Setup(publicKey: .some(nil), keyID: nil)
        #expect(setup.reason(OfferSignatureRendering.json(try setup.promotional())) == "unknown_key")
        let signed = try setup.signer.promotionalJWS(productID: "p", offerID: "o", transactionID: nil, nonce: Self.nonce, at: TestTime.start)
        #expect(setup.reason(OfferSignatureRendering.json(signed)) == "unknown_key")
        // Without a key id set, any key id of the key is taken.
        let anyID = try Setup(keyID: nil)
        #expect(anyID.reason(OfferSignatureRendering.json(try anyID.promotional())) == nil)
    }

    /// Over HTTP: the API simulator, and the `simulator` command's one port (verifyReceipt
    /// beside the API), both answer /offers/verify without a bearer token.
    @Test func overHTTPOnBothSimulators() async throws {
        let (credentials, key) = makeTestCredentials(bundleID: Self.bundleID)
        let signer = OfferSigner(credentials)
        let good = OfferSignatureRendering.json(
            try signer.promotional(productID: "pro.monthly", offerID: "WINBACK1", applicationUsername: "", nonce: Self.nonce, at: Date()))
        let tampered = try Self.replacing(good, "product_id", .string("pro.yearly"))
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        func post(_ url: String, _ body: String) async throws -> (Int, JSONValue) {
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.body = .bytes(ByteBuffer(string: body))
            let response = try await http.execute(request, timeout: .seconds(600))
            let bytes = try await response.body.collect(upTo: 1 << 20)
            return (Int(response.status.code), try JSONValue.parse(Array(bytes.readableBytesView)))
        }
        let api = try await ServerAPISimulator.start(ServerAPIConfiguration(publicKey: key.publicKey))
        let apiURL = "http://127.0.0.1:\(api.port)/offers/verify"
        do {
            #expect(try await post(apiURL, good).1["valid"] == .bool(true))
            #expect(try await post(apiURL, tampered).1["reason"] == .string("bad_signature"))
            #expect(try await post(apiURL, String(repeating: "x", count: 70 * 1024)) .0 == 413)
        } catch {
            Issue.record("\(error)")
        }
        try await api.stop()

        let service = try ServerAPIService(ServerAPIConfiguration(publicKey: key.publicKey))
        let both = try await VerifyReceiptSimulator.start(SimulatorConfiguration(), api: service)
        do {
            #expect(both.offerVerificationURL == "http://127.0.0.1:\(both.port)/offers/verify")
            #expect(try await post(both.offerVerificationURL, good).1["valid"] == .bool(true))
            #expect(try await post(both.offerVerificationURL, tampered).1["reason"] == .string("bad_signature"))
        } catch {
            Issue.record("\(error)")
        }
        try await both.stop()
        try await http.shutdown()
    }
}
