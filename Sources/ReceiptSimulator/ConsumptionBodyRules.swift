import AppStoreAPI
import ReceiptCore

/// Apple's rules for a Send Consumption Information (v2) body, as the simulator applies them
/// (fact sheet app-store-server-api-actions.md §3): the five fields and no other, each of its
/// JSON type; `customerConsented` true; `deliveryStatus` and `refundPreference` Apple's values;
/// `consumptionPercentage` a whole number of milliunits 0–100000, above 0 only when
/// `DELIVERED`, left out for an auto-renewable subscription, and strictly between 0 and 100000
/// with `GRANT_PRORATED`.
///
/// Apple names errors for a refund preference, a percentage out of range, a percentage with an
/// undelivered item and a percentage for an auto-renewable, but their numbers are in no
/// library: those refusals, and an unknown field or a body that is not a JSON object, get
/// `4000000` (generalBadRequest) with a message naming the field, never a guessed number.
/// An optional field sent as `null` counts as left out.
public enum ConsumptionBodyRules {
    /// The fields Apple defines.
    public static let fields: Set<String> = [
        "customerConsented", "deliveryStatus", "sampleContentProvided", "consumptionPercentage", "refundPreference",
    ]

    /// Why a body is refused: HTTP 400, Apple's code, and a message naming the field.
    public struct Refusal: Sendable, Hashable {
        public let code: APIErrorCode
        public let message: String

        init(_ code: APIErrorCode, _ message: String) {
            self.code = code
            self.message = message
        }
    }

    /// The refusal of `body` for a transaction of product type `type` (Apple's string:
    /// `Auto-Renewable Subscription`, …), or nil when Apple takes it (202).
    public static func refusal(of body: [UInt8], productType type: String?) -> Refusal? {
        guard let value = try? JSONValue.parse(body, maximumDepth: 8), case .object(let object) = value else {
            return Refusal(.generalBadRequest, "Invalid request: the body is not a JSON object.")
        }
        if let unknown = object.keys.sorted().first(where: { !fields.contains($0) }) {
            return Refusal(.generalBadRequest, "Invalid request: unknown field \(ServerAPIService.shown(unknown)).")
        }
        guard case .bool(true)? = object["customerConsented"] else { return Refusal(.invalidCustomerConsented, "Invalid customer consented.") }
        guard case .string(let deliveryText)? = object["deliveryStatus"], let delivery = DeliveryStatus(rawValue: deliveryText) else {
            return Refusal(.invalidDeliveryStatus, "Invalid delivery status.")
        }
        guard case .bool? = object["sampleContentProvided"] else {
            return Refusal(.invalidSampleContentProvided, "Invalid sample content provided.")
        }
        var preference: RefundPreference?
        switch object["refundPreference"] {
        case nil, .null?: break
        case .string(let text)? where RefundPreference(rawValue: text) != nil: preference = RefundPreference(rawValue: text)
        default: return Refusal(.generalBadRequest, "Invalid request: refundPreference is none of DECLINE, GRANT_FULL, GRANT_PRORATED.")
        }
        var percentage: Int64?
        switch object["consumptionPercentage"] {
        case nil, .null?: break
        case .integer(let milliunits)? where (0...100_000).contains(milliunits): percentage = milliunits
        default: return Refusal(.generalBadRequest, "Invalid request: consumptionPercentage is not a whole number from 0 to 100000.")
        }
        if let percentage {
            if type == TransactionRow.autoRenewable {
                return Refusal(.generalBadRequest, "Invalid request: consumptionPercentage is left out for an auto-renewable subscription.")
            }
            if delivery != .delivered, percentage != 0 {
                return Refusal(.generalBadRequest, "Invalid request: consumptionPercentage must be 0 unless deliveryStatus is DELIVERED.")
            }
        }
        if preference == .grantProrated, type != TransactionRow.autoRenewable {
            guard let percentage, percentage > 0, percentage < 100_000 else {
                return Refusal(.generalBadRequest, "Invalid request: GRANT_PRORATED needs a consumptionPercentage above 0 and below 100000.")
            }
        }
        return nil
    }
}
