import ReceiptCore

/// Plain-language explanations of Apple's `verifyReceipt` status codes, written for a support
/// engineer: what happened, whether retrying helps, and what to do next.
public struct AppleStatus: Sendable, Hashable {
    public var code: Int
    public var title: String
    public var explanation: String
    /// Whether a client should retry (for 21100–21199, only when `is-retryable` says so).
    public var retryable: Bool
    public var nextStep: String

    /// The catalogue entry for `code`; `isRetryable` is the response's `is-retryable` flag.
    public static func explain(_ code: Int, isRetryable: Bool? = nil) -> AppleStatus {
        switch code {
        case 0:
            return .init(
                code: 0, title: "Valid",
                explanation: "Apple authenticated the receipt. For an app receipt this is the status of the whole receipt: an expired subscription still returns 0.",
                retryable: false, nextStep: "Look at the subscription fields for what the customer is entitled to.")
        case 21000:
            return .init(
                code: code, title: "Bad request",
                explanation: "Apple could not read the request: it was not a POST, or the JSON was malformed.",
                retryable: false, nextStep: "A client bug: check the request body is JSON with receipt-data.")
        case 21001:
            return .init(
                code: code, title: "No longer sent", explanation: "Apple no longer sends this status.", retryable: false,
                nextStep: "Treat as an unknown error and re-check the request.")
        case 21002:
            return .init(
                code: code, title: "Malformed receipt data or temporary issue",
                explanation: "The receipt-data was malformed or missing, or Apple had a temporary problem. Xcode StoreKit-testing receipts always get this answer.",
                retryable: true,
                nextStep: "Check the receipt decodes here; if it does and is not an Xcode receipt, retry once later.")
        case 21003:
            return .init(
                code: code, title: "Could not be authenticated",
                explanation: "Apple could not authenticate the receipt; a missing shared secret for a subscription receipt is a common cause.",
                retryable: false, nextStep: "Send the app's shared secret as password, and check the receipt is genuine.")
        case 21004:
            return .init(
                code: code, title: "Shared secret mismatch",
                explanation: "The shared secret (password) does not match the one on file for this app.",
                retryable: false,
                nextStep: "A configuration error: use the app-specific shared secret from App Store Connect.")
        case 21005:
            return .init(
                code: code, title: "Receipt server unavailable",
                explanation: "Apple's receipt server was temporarily unable to provide the receipt.", retryable: true,
                nextStep: "Retry with backoff; many at once may mean an Apple outage.")
        case 21006:
            return .init(
                code: code, title: "Valid, subscription expired",
                explanation: "An iOS 6-style transaction receipt for an auto-renewable subscription that has expired. The receipt is genuine and decoded in the response.",
                retryable: false, nextStep: "Treat as valid and expired: the customer is not entitled until they renew.")
        case 21007:
            return .init(
                code: code, title: "Sandbox receipt sent to production",
                explanation: "This is a sandbox (test) receipt and was sent to the production server.", retryable: false,
                nextStep: "Re-send to the sandbox server; receiptdash does this automatically. Nothing to do.")
        case 21008:
            return .init(
                code: code, title: "Production receipt sent to sandbox",
                explanation: "This is a production receipt and was sent to the sandbox server.", retryable: false,
                nextStep: "Re-send to the production server; receiptdash does this automatically. Nothing to do.")
        case 21009:
            return .init(
                code: code, title: "Internal data access error",
                explanation: "Apple had an internal data access error.", retryable: true, nextStep: "Retry later.")
        case 21010:
            return .init(
                code: code, title: "Account not found or deleted",
                explanation: "The user account cannot be found or has been deleted.", retryable: false,
                nextStep: "Treat as never purchased.")
        case 21100...21199:
            let retry = isRetryable ?? false
            return .init(
                code: code, title: "Internal data access error",
                explanation: "Apple had an internal data access error"
                    + (isRetryable == nil ? "." : retry ? "; Apple says it is temporary (is-retryable)." : "; Apple says it will not resolve on retry."),
                retryable: retry,
                nextStep: retry ? "Retry later with backoff." : "Do not retry; contact Apple if it persists.")
        default:
            return .init(
                code: code, title: "Unknown status",
                explanation: "Apple returned a status receiptdash does not know.", retryable: false,
                nextStep: "Record it and check Apple's documentation.")
        }
    }
}
