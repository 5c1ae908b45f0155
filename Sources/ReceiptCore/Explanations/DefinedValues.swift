/// The named values Apple defines for the enumerations receiptdash shows in words, each with
/// its meaning. A value outside a table is kept as sent and said to be not defined by Apple,
/// never read as the nearest known one. (Numbered enumerations with their own wording:
/// ``OfferWords``, ``CancellationReason``, ``ExpirationIntent``, and the Server API's subscription status.)
public enum DefinedValues {
    /// `inAppOwnershipType` / `in_app_ownership_type`.
    public static let ownership = ["PURCHASED": "bought by this account", "FAMILY_SHARED": "shared through Family Sharing"]
    /// `transactionReason`.
    public static let transactionReason = ["PURCHASE": "bought by the customer", "RENEWAL": "an automatic renewal"]
    /// `environment` of a transaction, renewal info, notification or AppTransaction.
    public static let environment = Dictionary(uniqueKeysWithValues: StoreEnvironment.allCases.map { ($0.rawValue, $0.meaning) })
    /// An AppTransaction's `originalPlatform`.
    public static let platform = ["iOS": "iPhone or iPad", "macOS": "Mac", "tvOS": "Apple TV", "visionOS": "Apple Vision Pro"]
    /// A `CONSUMPTION_REQUEST`'s `consumptionRequestReason`.
    public static let consumptionRequestReason = [
        "UNINTENDED_PURCHASE": "unintended purchase", "FULFILLMENT_ISSUE": "not delivered", "UNSATISFIED_WITH_PURCHASE": "unsatisfied",
        "LEGAL": "legal", "OTHER": "other",
    ]
    /// A renewal info's `priceIncreaseStatus`.
    public static func priceIncrease(_ status: Int) -> String {
        switch status {
        case 0: "the customer has not answered the price increase"
        case 1: "the customer agreed to the price increase, or was told of it without needing to agree"
        default: AppleValue.notDefined
        }
    }

    /// `value`'s meaning in `table`, or "not defined by Apple".
    public static func meaning(_ value: String, in table: [String: String]) -> String {
        table[value] ?? AppleValue.notDefined
    }

    /// `value` itself when `table` holds it, else `value (not defined by Apple)`: for a row that
    /// shows the value and needs no meaning beside it.
    public static func shown(_ value: String, in table: [String: String]) -> String {
        table[value] == nil ? "\(value) (\(AppleValue.notDefined))" : value
    }
}
