import AppStoreAPI
import Foundation
import Testing
import TestSupport

@testable import ReceiptRendering
@testable import ReceiptCore

/// Every signed payload is read as the kind it is: the Retention Messaging realtime request is a
/// kind of its own with first-class fields, and a payload that fits no kind is `unknown` with
/// its fields kept, never read as the nearest kind.
@Suite struct PayloadKindsTests {
    typealias Payloads = TodaysPayloadsTests

    static let realtime: [String: JSONValue] = [
        "originalTransactionId": .string("2000000900000010"), "appAppleId": .integer(1_234_567_890),
        "productId": .string(Payloads.product), "userLocale": .string("en-US"),
        "requestIdentifier": .string("5e0c2a77-91d4-4c1b-b0a6-2f3e8d9c1a40"), "signedDate": .integer(Payloads.march),
        "environment": .string("Sandbox"),
    ]

    @Test func theRealtimeRequestIsAKindOfItsOwn() async throws {
        let decoded = try ReceiptDecoder().decode(text: try Payloads.sign(Self.realtime))
        #expect(decoded.format == .realtimeRequest)
        #expect(decoded.format.rawValue == "realtime-request")
        #expect(decoded.pendingRenewalInfo.isEmpty)
        #expect(decoded.receipt == nil)
        #expect(decoded.warnings.isEmpty)
        #expect(decoded.environment == .sandbox)
        let json = try #require(InspectJSON.object(for: decoded).object)
        #expect(json["format"] == .string("realtime-request"))
        #expect(
            json["realtime_request"]
                == .object([
                    "app_apple_id": .integer(1_234_567_890), "environment": .string("Sandbox"),
                    "original_transaction_id": .string("2000000900000010"), "product_id": .string(Payloads.product),
                    "request_identifier": .string("5e0c2a77-91d4-4c1b-b0a6-2f3e8d9c1a40"), "signed_date": .string("2024-03-01T00:00:00Z"),
                    "user_locale": .string("en-US"),
                ]))
        // Signed by the test CA's chain like any other payload.
        let report = await (try ECHierarchy.shared.get()).evaluator.evaluate(decoded, options: TamperClock.options)
        #expect(report.verdict == .valid)
    }

    /// Fields Apple adds to the realtime request later are kept.
    @Test func aRealtimeRequestKeepsFieldsAppleAddsLater() throws {
        var payload = Self.realtime
        payload["messageHint"] = .string("win-back")
        let decoded = try ReceiptDecoder().decode(text: try Payloads.sign(payload))
        #expect(decoded.realtimeRequest?.otherFields.map(\.name) == ["messageHint"])
    }

    /// A payload with none of any kind's keys: `unknown`, every field kept as sent. One that has
    /// only keys several kinds share (signedDate, environment) is not read as renewal info.
    @Test(arguments: [
        ["foo": JSONValue.integer(1)],
        ["signedDate": .integer(Payloads.march), "environment": .string("Production"), "originalTransactionId": .string("1")],
    ])
    func aPayloadOfNoKindIsUnknownWithItsFieldsKept(_ payload: [String: JSONValue]) throws {
        let decoded = try ReceiptDecoder().decode(text: try Payloads.sign(payload))
        #expect(decoded.format == .unknown)
        #expect(decoded.pendingRenewalInfo.isEmpty)
        #expect(decoded.transactions.isEmpty)
        #expect(Set(decoded.payloadFields.map(\.name)) == Set(payload.keys))
        let json = try #require(InspectJSON.object(for: decoded).object)
        #expect(json["format"] == .string("unknown"))
        #expect(json["payload_fields"]?.object?.count == payload.count)
        #expect(decoded.warnings.count == 1)
    }

    /// An external purchase token carries no environment: it is derived as Apple's libraries
    /// derive it, from the token's id.
    @Test(arguments: [("SANDBOX_3fa1c9", StoreEnvironment.sandbox, "Sandbox"), ("3fa1c9", .production, "Production")])
    func anExternalPurchaseTokensEnvironmentIsDerivedFromItsID(_ id: String, _ environment: StoreEnvironment, _ raw: String) throws {
        let decoded = try Payloads.notification(
            "EXTERNAL_PURCHASE_TOKEN", "UNREPORTED", container: "externalPurchaseToken",
            ["externalPurchaseId": .string(id), "tokenCreationDate": .integer(Payloads.march), "appAppleId": .integer(55), "bundleId": .string("b")])
        #expect(decoded.environment == environment)
        #expect(decoded.rawEnvironment == raw)
        #expect(InspectJSON.object(for: decoded).object?["environment"] == .string(raw))
    }

    /// A nested field that is not a JWS (a placeholder) is kept as sent, with its warning.
    @Test func aNestedFieldThatIsNotATokenIsKeptAsSent() throws {
        let words = Wording("payload-kinds")
        let decoded = try Payloads.notification(
            "TEST", nil, container: "data",
            ["signedTransactionInfo": .string("placeholder"), "environment": .string("Sandbox"), "bundleId": .string("b")])
        #expect(decoded.nested.isEmpty)
        #expect(decoded.warnings.count == 1)
        words.said(decoded.warnings.first)
        words.said(decoded.warnings.first)
        let kept = try #require(decoded.notification?.otherFields.first { $0.name == "data.signedTransactionInfo" })
        #expect(kept.value == "placeholder")
        words.check()
    }

    /// A renewal's app account token is a first-class field.
    @Test func aRenewalsAppAccountTokenIsFirstClass() throws {
        var renewal = UndefinedValuesTests.renewal(.integer(1))
        renewal["appAccountToken"] = .string("7e3fb20b-4cdb-47cc-936d-99d65f608138")
        let decoded = try ReceiptDecoder().decode(text: try Payloads.sign(renewal))
        let json = try #require(InspectJSON.object(for: decoded).object?["pending_renewal_info"]?.array?.first?.object)
        #expect(json["app_account_token"] == .string("7e3fb20b-4cdb-47cc-936d-99d65f608138"))
        #expect(json["other_fields"] == nil)
    }

    /// inspect explains a notification as `notifications` does, an unknown type included.
    @Test(arguments: [
        ("DID_RENEW", nil as String?, "DID_RENEW: "),
        ("SOMETHING_NEW", nil, "SOMETHING_NEW: a notification type receiptdash does not know yet (kept as sent)"),
    ])
    func inspectExplainsANotificationAsNotificationsDoes(_ type: String, _ subtype: String?, _ start: String) throws {
        let decoded = try Payloads.notification(type, subtype, container: "data", ["environment": .string("Sandbox"), "bundleId": .string("b")])
        let line = NotificationRow.explanation(type: type, subtype: subtype, decoded: decoded)
        #expect(line.hasPrefix(start))
        #expect(InspectJSON.object(for: decoded).object?["notification"]?.object?["explanation"] == .string(line))
        #expect(TextSummary.render(decoded).contains(line))
    }
}
