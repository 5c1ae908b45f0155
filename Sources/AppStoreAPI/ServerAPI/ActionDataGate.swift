import ReceiptCore
import ReceiptTrust

/// The one gate every write to Apple passes, whichever door it comes through (a command or the
/// dashboard): on customer data judged `invalid` nothing is sent unless the person says to go
/// ahead (`--force-untrusted`, or `F` on the dashboard's plan), and every plan says what its
/// data was.
public enum ActionDataGate {
    /// Why a write on data of `verdict` is not sent (code `untrusted-data`); nil when it may go.
    /// `howToForce` names the door's way to go ahead.
    public static func refusal(_ verdict: TrustReport.Verdict?, forced: Bool, howToForce: String = commandForce) -> APIFailure? {
        guard verdict == .invalid, !forced else { return nil }
        return APIFailure(
            .untrustedData,
            "the customer's data is not genuine (invalid): nothing was sent; check it with `receiptdash lookup`, or \(howToForce) to act on it anyway")
    }

    /// How a command goes ahead on data that is not genuine.
    public static let commandForce = "add --force-untrusted"

    /// How the dashboard goes ahead on data that is not genuine.
    public static let dashboardForce = "press F on the plan"

    /// `data: valid (…)`: the plan's line saying what it was read from and how far it can be
    /// trusted.
    public static func dataLine(_ verdict: TrustReport.Verdict?, forced: Bool) -> String {
        switch verdict {
        case nil: "data: none read (nothing of the customer's is checked before this write)"
        case .valid?: "data: valid (the customer's transactions, signed by Apple)"
        case .test?: "data: test (signed by a test root, not Apple's: test data)"
        case .unverifiable?: "data: unverifiable (the customer's data could not be checked)"
        case .invalid?: forced ? "data: INVALID (not genuine): sent anyway as asked (--force-untrusted, or F on the dashboard's plan)" : "data: INVALID (not genuine)"
        }
    }
}
