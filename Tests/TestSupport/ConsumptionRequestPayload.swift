import Foundation

/// The `signedPayload` of a CONSUMPTION_REQUEST carrying its transaction, as tests store it
/// (unsigned: the trail keeps the receiver's verdict beside it, and the answerer reads facts
/// from the payload, never its signature).
package enum ConsumptionRequestPayload {
    package static func make(
        uuid: String, transactionID: String, productID: String, type: String = "Consumable", purchased: Date, expires: Date? = nil, signed: Date,
        storefront: String = "USA", environment: String = "Sandbox", reason: String = "UNINTENDED_PURCHASE"
    ) -> String {
        let ms = { (d: Date) in Int64(d.timeIntervalSince1970 * 1000) }
        let expiry = expires.map { #","expiresDate":\#(ms($0))"# } ?? ""
        let info = UnsignedJWS.make(
            #"{"transactionId":"\#(transactionID)","originalTransactionId":"\#(transactionID)","productId":"\#(productID)","type":"\#(type)","purchaseDate":\#(ms(purchased))\#(expiry),"storefront":"\#(storefront)","environment":"\#(environment)","bundleId":"com.example.app"}"#
        )
        return UnsignedJWS.make(
            #"{"notificationType":"CONSUMPTION_REQUEST","notificationUUID":"\#(uuid)","version":"2.0","signedDate":\#(ms(signed)),"data":{"environment":"\#(environment)","bundleId":"com.example.app","consumptionRequestReason":"\#(reason)","signedTransactionInfo":"\#(info)"}}"#
        )
    }
}
