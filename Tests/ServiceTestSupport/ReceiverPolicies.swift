import NotificationReceiver
import AppStoreAPI
import ReceiptCore
import ReceiptTrust

extension ReceiverPolicy {
    /// Apple's sandbox corpus and the test signer's notifications, signed long before the
    /// tests' clock (or, by the sender's fake clock, after it): both environments, no bound
    /// on signedDate (as `--environment sandbox --max-age none`).
    package static func replaying(
        allowedBundleIDs: [String] = [], appAppleID: Int64? = nil, anchors: TrustAnchors = .apple, v1SharedSecret: AppStoreAPI.SharedSecret? = nil
    ) -> ReceiverPolicy {
        ReceiverPolicy(
            allowedBundleIDs: allowedBundleIDs, appAppleID: appAppleID, anchors: anchors, environments: [.production, .sandbox],
            v1SharedSecret: v1SharedSecret, maximumAge: nil, maximumClockSkew: .seconds(100 * 365 * 86_400))
    }
}
