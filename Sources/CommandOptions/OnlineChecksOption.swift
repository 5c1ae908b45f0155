import AppStoreAPI
import AppStoreClients
import ArgumentParser
import OnlineRevocation
import ReceiptCore

/// `--online-checks`: OCSP about each JWS chain's leaf and intermediate, as Apple's libraries do
/// with `enableOnlineChecks` (the chain is then judged now, not at `signedDate`). Off, nothing
/// goes to the network for trust.
public struct OnlineChecksOption: ParsableArguments {
    public init() {}

    @Flag(
        name: .long,
        help: """
            Ask Apple's OCSP responder whether each JWS chain's leaf and intermediate were revoked, and judge the \
            chain now, not at signedDate (as Apple's libraries' enableOnlineChecks). A responder that cannot \
            answer gives unverifiable, retryable.
            """)
    public var onlineChecks = false

    /// The checks when the flag, or the API profile's `online_checks = true`, asks for them.
    public func make(profile: APIProfile? = nil) -> OnlineChecks? {
        guard onlineChecks || profile?.onlineChecks == true else { return nil }
        return OnlineChecks(transport: HTTPOCSPTransport())
    }
}
