import AppStoreAPI
import Foundation

extension ActionRuleError {
    /// The rule in the command line's words: each value by its flag (`--days`, `--token`).
    var commandLine: String {
        let given = value.map { " (not \($0))" } ?? ""
        return switch code {
        case .daysOutOfRange: "--days must be 1 to 90: Apple extends a subscription by at most 90 days at a time\(given)"
        case .requestIDLength: "--request-id must be 1 to 128 characters"
        case .requestIDNotUUID: "--request-id must be a UUID for a mass extension (e.g. \(UUID().uuidString))"
        case .productIDEmpty: "--product-id is empty"
        case .storefrontInvalid: "--storefront takes a three-letter storefront code such as USA or FRA\(given)"
        case .consentMissing:
            "--customer-consented is required: Apple takes consumption information only with the customer's consent (without it, do not answer)"
        case .consumedPercentOutOfRange: "--consumed-percent must be 0 to 100\(given)"
        case .consumedWhileUndelivered: "--consumed-percent must be 0 when the item was not delivered (--delivery-status \(value ?? "?"))"
        case .proratedNeedsPartialConsumption: "--refund-preference grant-prorated needs --consumed-percent above 0 and below 100"
        case .consumedPercentForAutoRenewable:
            "leave --consumed-percent out for an auto-renewable subscription: Apple works the share out from its period and refuses one sent"
        case .tokenNotUUID: "--token must be a UUID such as 7e3fb20b-4cdb-47cc-936d-99d65f608138 (an app account token is one)"
        }
    }
}
