/// `expiration_intent` / `expirationIntent`: why a subscription expired.
public enum ExpirationIntent {
    /// A sentence saying why, and what to do about it.
    public static func explain(_ intent: Int) -> String {
        switch intent {
        case 1: "the customer cancelled (turned auto-renew off); a win-back offer may bring them back"
        case 2: "a billing error: the payment failed (Apple may retry); ask the customer to update their payment method"
        case 3: "the customer did not agree to a price increase"
        case 4: "the product was not available for purchase at renewal time"
        case 5: "an unknown or other reason"
        default: "why is unknown: expiration intent \(intent) (\(AppleValue.notDefined))"
        }
    }
}

/// `cancellation_reason` / `revocationReason`.
public enum CancellationReason {
    /// What the number means, as the detail view puts it after the number: `not defined by
    /// Apple` for a number Apple does not define.
    public static func meaning(_ reason: Int) -> String {
        reason == 0 || reason == 1 ? explain(reason) : AppleValue.notDefined
    }

    public static func explain(_ reason: Int?) -> String {
        switch reason {
        case 1: "the customer reported an issue with the app"
        case 0: "another reason (for example an accidental purchase)"
        case let r?: "reason \(r) (\(AppleValue.notDefined))"
        case nil: "no reason given"
        }
    }
}
