import AppStoreClients
import ArgumentParser
import CommandOptions
import Foundation
import AppStoreAPI
import ReceiptCore

// A value these do not take is said with every value they do: the names, and for reasons
// Apple's numbers too (`--reason because`: "undeclared, customer-satisfaction, …, 0, 1, 2, 3").
extension ExtendReason: ExpressibleByArgument {
    public static var allValueStrings: [String] { allCases.map(\.name) + allCases.map { String($0.rawValue) } }
}
extension DeliveryStatus: ExpressibleByArgument {
    public static var allValueStrings: [String] { allCases.map(\.name) }
}
extension RefundPreference: ExpressibleByArgument {
    public static var allValueStrings: [String] { allCases.map(\.name) }
}

/// `receiptdash extend`: one subscription, every active subscriber of a product, or the status
/// of such a mass extension.
struct Extend: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "extend",
        abstract: "Extend a subscription's renewal date (one customer, or every active subscriber of a product).",
        discussion: """
            An extension cannot be taken back, and Apple allows two per customer per 365 days, at \
            most 90 days each; only active subscriptions with a paid period are eligible. The plan \
            (customer, product, "expires … → …", the request id) is shown and confirmed with y/N on \
            a terminal; without one, --yes is needed. --dry-run prints the request and sends \
            nothing. Every write sent is recorded in the audit database (history --actions).

            Examples:
              receiptdash extend --original-transaction-id 2000000123456789 \\
                --days 7 --reason service-issue
              receiptdash extend --all-active --product-id com.example.pro.monthly \\
                --days 3 --reason service-issue --yes
              receiptdash extend --status --product-id com.example.pro.monthly \\
                --request-id 5a4f… --wait

            Exit status: 0 done (or dry run); 1 refused by Apple or failed; 64 usage, a setting \
            that cannot be used (credentials, a key file), read-only, or no --yes without a terminal.
            """)

    @Option(name: .long, help: ArgumentHelp("The subscription's original transaction ID.", valueName: "id"))
    var originalTransactionId: String?

    @Flag(name: .long, help: "Extend every active subscriber of --product-id (Apple works through them asynchronously).")
    var allActive = false

    @Flag(name: .long, help: "Ask how a mass extension (--product-id, --request-id) is progressing.")
    var status = false

    @Option(name: .long, help: ArgumentHelp("The product (for --all-active and --status).", valueName: "id"))
    var productId: String?

    @Option(name: .long, help: ArgumentHelp("Days to add, 1 to 90.", valueName: "n"))
    var days: Int?

    @Option(name: .long, help: "Why: undeclared, customer-satisfaction, other or service-issue (or 0-3).")
    var reason: ExtendReason?

    @Option(name: .long, help: ArgumentHelp("With --all-active: only this storefront (three letters, repeatable; default all).", valueName: "cc"))
    var storefront: [String] = []

    @Flag(name: .long, help: "With --status: ask every 2 seconds until the extension is complete.")
    var wait = false

    @OptionGroup var action: ActionOptions

    @OptionGroup(title: "App Store Server API") var api: APIOptions

    func validate() throws {
        let modes = [originalTransactionId != nil, allActive, status].filter { $0 }.count
        guard modes == 1 else {
            throw ValidationError("Name one of --original-transaction-id ID, --all-active --product-id P, or --status --product-id P --request-id ID.")
        }
        if wait && !status { throw ValidationError("--wait goes with --status.") }
        if status {
            guard productId != nil, action.requestId != nil else { throw ValidationError("--status needs --product-id P and --request-id ID.") }
            return
        }
        guard let days, let reason else { throw ValidationError("--days N and --reason REASON are required to extend.") }
        do {
            if allActive {
                guard let productId else { throw ValidationError("--all-active needs --product-id P.") }
                _ = try MassExtendBody(
                    days: days, reason: reason, productID: productId, requestIdentifier: action.requestId ?? UUID().uuidString, storefronts: storefront)
            } else {
                _ = try ExtendRenewalDateBody(days: days, reason: reason, requestIdentifier: action.requestId ?? "check")
            }
        } catch let error as ActionRuleError {
            throw ValidationError(error.commandLine + ".")
        }
        if !storefront.isEmpty && !allActive { throw ValidationError("--storefront goes with --all-active.") }
    }

    func run() async throws {
        if status, let productId, let requestID = action.requestId {
            try await statusRun(productId, requestID)
            return
        }
        guard let days, let reason else { return }
        let reasonLine = "reason: \(reason.name)"
        if allActive, let productId {
            let storefronts = storefront
            try await ActionFlow(
                action: .massExtend, ids: ActionIDs(productID: productId), options: action, api: api,
                extraLines: [
                    "every active subscriber of \(productId), by \(days) days",
                    "storefronts: " + (storefronts.isEmpty ? "all" : storefronts.map { $0.uppercased() }.joined(separator: ", ")), reasonLine,
                ]
            ) { id in
                .massExtend(try MassExtendBody(days: days, reason: reason, productID: productId, requestIdentifier: id, storefronts: storefronts))
            }.run()
            return
        }
        guard let original = originalTransactionId?.trimmingCharacters(in: .whitespaces) else { return }
        try await ActionFlow(
            action: .extend, ids: ActionIDs(originalTransactionID: original), options: action, api: api, extendDays: days, extraLines: [reasonLine]
        ) { id in
            try .extendRenewalDate(original, try ExtendRenewalDateBody(days: days, reason: reason, requestIdentifier: id))
        }.run()
    }

    /// `--status`: once, or with `--wait` until complete.
    private func statusRun(_ productID: String, _ requestID: String) async throws {
        try await ActionFlow(action: .massExtendStatus, ids: ActionIDs(productID: productID), options: action, api: api, wait: wait) { _ in
            try .massExtendStatus(productID: productID, requestIdentifier: requestID)
        }.run()
    }
}
