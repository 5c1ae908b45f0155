import AppStoreAPI
import ArgumentParser
import CommandOptions
import Foundation
import JSONWriting
import ReceiptRendering
import UntrustedText

/// `receiptdash offer-signature`: sign offers for a test app with the In-App Purchase key.
struct OfferSignatureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "offer-signature",
        abstract: "Sign promotional offers and introductory offer eligibility for testing, with the In-App Purchase key.",
        discussion: """
            What an app's server signs for StoreKit, made here so a test app (or a QA engineer) can \
            buy a promotional offer, or be told it may or may not have an introductory offer, without \
            that server. Signed locally with the same In-App Purchase key and settings as `lookup` \
            (flags, --api-profile or the RECEIPTDASH_* variables); nothing is sent anywhere, and the \
            key is never printed.

            `receiptdash simulator` checks what these make: POST the --format json output to its \
            /offers/verify.

            Exit status: 0 signed; 64 a value or the key cannot be used (what to fix is said).
            """,
        subcommands: [Promotional.self, PromotionalJWS.self, IntroductoryEligibility.self]
    )

    /// `offer-signature promotional`: version 1.
    struct Promotional: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "promotional",
            abstract: "A version 1 promotional offer signature (StoreKit's SKPaymentDiscount / promotionalOffer purchase option).",
            discussion: """
                ECDSA P-256 SHA-256 over the bundle id, key id, product id, offer id, application \
                username (lowercased), nonce (lowercased) and timestamp (ms), joined by U+2063; DER, \
                then base64. Apple accepts it for 24 hours after its timestamp.

                Examples:
                  receiptdash offer-signature promotional --api-profile myapp \\
                    --product-id com.example.pro.monthly --offer-id WINBACK1 \\
                    --application-username 2b1f6a34-6d0c-4f57-9a47-3c8e2d6e7f10
                  receiptdash offer-signature promotional --api-profile myapp \\
                    --product-id com.example.pro.monthly --offer-id WINBACK1 \\
                    --application-username '' --format json
                """)

        @OptionGroup var promotion: PromotionalOfferOptions

        @Option(
            name: .long,
            help: ArgumentHelp(
                "What the app passes as applicationUsername (its app account token, or '' for none); signed lowercased.",
                valueName: "text"))
        var applicationUsername: String

        @Option(name: .long, help: ArgumentHelp("The nonce, a UUID (default: a fresh one); signed lowercased.", valueName: "uuid"))
        var nonce: String?

        @OptionGroup var output: OfferOutputOption

        @OptionGroup(title: "In-App Purchase key, as for lookup (the URLs and --root-ca are not used)") var api: APIOptions

        func validate() throws {
            try OfferSigning.check { () throws(OfferSignatureError) in
                try promotion.check()
                _ = try OfferValues.applicationUsername(applicationUsername)
                if let nonce { _ = try OfferValues.nonce(nonce) }
            }
        }

        func run() throws {
            let signer = try OfferSigning.signer(api)
            let nonce = try OfferSigning.nonce(self.nonce)
            let offer = try OfferSigning.check { () throws(OfferSignatureError) in
                try signer.promotional(
                    productID: promotion.productId, offerID: promotion.offerId, applicationUsername: applicationUsername, nonce: nonce, at: Date())
            }
            Console.standard.output(output.format == .json ? OfferSignatureRendering.json(offer) : OfferSignatureRendering.text(offer))
        }
    }

    /// `offer-signature promotional-jws`: version 2.
    struct PromotionalJWS: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "promotional-jws",
            abstract: "A version 2 promotional offer signature: a JWS (as PromotionalOfferV2SignatureCreator makes).",
            discussion: """
                ES256 with header kid; claims iss (issuer id), bid, aud "promotional-offer", iat, \
                nonce (a fresh UUID), productId, offerIdentifier and, with --transaction-id, \
                transactionId.

                Example:
                  receiptdash offer-signature promotional-jws --api-profile myapp \\
                    --product-id com.example.pro.monthly --offer-id WINBACK1 \\
                    --transaction-id 2000000123456789
                """)

        @OptionGroup var promotion: PromotionalOfferOptions

        @Option(
            name: .long,
            help: ArgumentHelp("Any transaction ID of the customer, the appTransactionId included (optional, recommended).", valueName: "id"))
        var transactionId: String?

        @OptionGroup var output: OfferOutputOption

        @OptionGroup(title: "In-App Purchase key, as for lookup (the URLs and --root-ca are not used)") var api: APIOptions

        func validate() throws {
            try OfferSigning.check { () throws(OfferSignatureError) in
                try promotion.check()
                if let transactionId { _ = try OfferValues.transactionID(transactionId) }
            }
        }

        func run() throws {
            let signer = try OfferSigning.signer(api)
            let signed = try OfferSigning.check { () throws(OfferSignatureError) in
                try signer.promotionalJWS(productID: promotion.productId, offerID: promotion.offerId, transactionID: transactionId, nonce: UUID(), at: Date())
            }
            Console.standard.output(output.format == .json ? OfferSignatureRendering.json(signed) : OfferSignatureRendering.text(signed))
        }
    }

    /// `offer-signature introductory-eligibility`.
    struct IntroductoryEligibility: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "introductory-eligibility",
            abstract: "An introductory offer eligibility signature: a JWS (as IntroductoryOfferEligibilitySignatureCreator makes).",
            discussion: """
                ES256 with header kid; claims iss (issuer id), bid, aud \
                "introductory-offer-eligibility", iat, nonce (a fresh UUID), productId, \
                allowIntroductoryOffer and transactionId. Give --allow or --deny.

                Example:
                  receiptdash offer-signature introductory-eligibility --api-profile myapp \\
                    --product-id com.example.pro.monthly \\
                    --transaction-id 2000000123456789 --deny
                """)

        @Option(name: .long, help: ArgumentHelp("The subscription's product ID.", valueName: "id"))
        var productId: String

        @Option(
            name: .long, help: ArgumentHelp("Any transaction ID of the customer, the appTransactionId included.", valueName: "id"))
        var transactionId: String

        @Flag(help: "Whether the customer may have the introductory offer (allowIntroductoryOffer).")
        var eligibility: Eligibility

        enum Eligibility: EnumerableFlag {
            case allow, deny

            static func help(for value: Self) -> ArgumentHelp? {
                switch value {
                case .allow: "The customer may have the introductory offer."
                case .deny: "The customer may not have the introductory offer."
                }
            }
        }

        @OptionGroup var output: OfferOutputOption

        @OptionGroup(title: "In-App Purchase key, as for lookup (the URLs and --root-ca are not used)") var api: APIOptions

        func validate() throws {
            try OfferSigning.check { () throws(OfferSignatureError) in
                _ = try OfferValues.productID(productId)
                _ = try OfferValues.transactionID(transactionId)
            }
        }

        func run() throws {
            let signer = try OfferSigning.signer(api)
            let signed = try OfferSigning.check { () throws(OfferSignatureError) in
                try signer.introductoryEligibility(
                    productID: productId, allowIntroductoryOffer: eligibility == .allow, transactionID: transactionId, nonce: UUID(),
                    at: Date())
            }
            Console.standard.output(output.format == .json ? OfferSignatureRendering.json(signed) : OfferSignatureRendering.text(signed))
        }
    }
}

/// `--format text|json` of every `offer-signature` subcommand.
struct OfferOutputOption: ParsableArguments {
    @Option(name: .long, help: "Output format: text (a fact a line) or json.")
    var format: OutputFormat = .text
}

/// What the `offer-signature` subcommands share: the key, and their values' errors as usage
/// errors (exit 64).
enum OfferSigning {
    /// `body`, its ``OfferSignatureError`` a usage error in its own words.
    static func check<T>(_ body: () throws(OfferSignatureError) -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw ValidationError(error.reason.prefix(1).uppercased() + error.reason.dropFirst() + ".")
        }
    }

    /// The signer for the credentials `api` names. A key that cannot be had is said on standard
    /// error and exits 64: nothing can be signed without it.
    static func signer(_ api: APIOptions) throws -> OfferSigner {
        do {
            return OfferSigner(try api.credentials())
        } catch let error as APIOptionsError {
            Console.standard.error("receiptdash: \(error.description)")
            throw ExitStatus.usage
        }
    }

    /// `--nonce`, or a fresh UUID.
    static func nonce(_ text: String?) throws -> UUID {
        guard let text else { return UUID() }
        return try check { () throws(OfferSignatureError) in try OfferValues.nonce(text) }
    }
}

/// The product and offer both promotional signatures name.
struct PromotionalOfferOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The subscription's product ID.", valueName: "id"))
    var productId: String

    @Option(name: .long, help: ArgumentHelp("The promotional offer's identifier in App Store Connect.", valueName: "id"))
    var offerId: String

    /// Both values as Apple takes them, else the coded reason.
    func check() throws(OfferSignatureError) {
        _ = try OfferValues.productID(productId)
        _ = try OfferValues.offerID(offerId)
    }
}
