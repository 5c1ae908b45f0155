import AppStoreAPI
import Foundation
import JSONWriting
import ReceiptCore

/// The body `receive --forward` sends downstream for one notification: the object
/// `notifications --format json` writes for it, plus the nested transaction and renewal info
/// decoded (as `inspect --format json` writes them) and Apple's `signedPayload` as it came, so a
/// consumer can verify it itself. Keys: those of ``NotificationListing`` and `transaction`,
/// `renewal_info`, `signed_payload` (null where the notification has none).
public enum ForwardedNotificationJSON {
    public static func body(_ row: NotificationRow, decoded: DecodedInput?, signedPayload: String?) -> [UInt8] {
        var out = JSONOutput(capacity: 4096 + (signedPayload?.utf8.count ?? 0) * 2)
        let transaction = decoded.flatMap { d in (d.nested.flatMap(\.input.transactions) + d.transactions).first }
        let renewal = decoded.flatMap { d in (d.nested.flatMap(\.input.pendingRenewalInfo) + d.pendingRenewalInfo).first }
        NotificationListing.object(row, into: &out) { out in
            out.key("renewal_info")
            if let renewal { InspectJSON.renewal(renewal, into: &out) } else { out.null() }
            out.nullableMember("signed_payload", signedPayload)
            out.key("transaction")
            if let transaction { InspectJSON.purchase(transaction, into: &out) } else { out.null() }
        }
        return out.bytes
    }
}
