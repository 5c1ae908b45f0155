import AppStoreClients
import ArgumentParser
import CommandOptions
import Foundation
import AppStoreAPI
import ReceiptCore

/// `receiptdash consumption`: answer Apple's CONSUMPTION_REQUEST for a transaction.
struct Consumption: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "consumption",
        abstract: "Send consumption information for a refund request (CONSUMPTION_REQUEST), so Apple decides on facts.",
        discussion: """
            Only with the customer's consent (--customer-consented). --consumed-percent 40 is sent \
            as 40000 milliunits; it must be 0 for an item that was not delivered, and above 0 and \
            below 100 with --refund-preference grant-prorated. Confirmed like every write \
            (--yes, --dry-run, --read-only); recorded in the audit database.
            """)

    @Option(name: .long, help: ArgumentHelp("The transaction the refund request is about.", valueName: "id"))
    var transactionId: String

    @Option(
        name: .long,
        help: "delivered, undelivered-quality-issue, undelivered-wrong-item, undelivered-server-outage or undelivered-other.")
    var deliveryStatus: DeliveryStatus

    @Flag(name: .long, help: "The customer consented to sharing this information (required).")
    var customerConsented = false

    @Option(name: .long, help: ArgumentHelp("Whether a free sample or trial was provided: true or false.", valueName: "bool"))
    var sampleContentProvided: Bool

    @Option(name: .long, help: ArgumentHelp("How much was consumed, 0 to 100.", valueName: "percent"))
    var consumedPercent: Double?

    @Option(name: .long, help: "decline, grant-full or grant-prorated.")
    var refundPreference: RefundPreference?

    @OptionGroup var action: ActionOptions

    @OptionGroup(title: "App Store Server API") var api: APIOptions

    func body() throws -> ConsumptionBody {
        try ConsumptionBody(
            customerConsented: customerConsented, deliveryStatus: deliveryStatus, sampleContentProvided: sampleContentProvided,
            consumedPercent: consumedPercent, refundPreference: refundPreference)
    }

    func validate() throws {
        do {
            _ = try body()
        } catch let error as ActionRuleError {
            throw ValidationError(error.commandLine + ".")
        }
    }

    func run() async throws {
        let id = transactionId.trimmingCharacters(in: .whitespaces)
        let body = try body()
        var lines = ["delivery: \(deliveryStatus.name), sample provided: \(sampleContentProvided)"]
        if let percent = body.consumptionPercentage { lines.append("consumed: \(Double(percent) / 1000) %") }
        if let refundPreference { lines.append("refund preference: \(refundPreference.name)") }
        try await ActionFlow(action: .consumption, ids: ActionIDs(transactionID: id), options: action, api: api, extraLines: lines) { _ in
            try .consumption(id, body)
        }.run()
    }
}

/// `receiptdash app-account-token`: attach a purchase to the right account.
struct AppAccountToken: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app-account-token",
        abstract: "Set the app account token of a purchase (one made outside the app, or to replace a token).")

    @Option(name: .long, help: ArgumentHelp("The purchase's original transaction ID.", valueName: "id"))
    var originalTransactionId: String

    @Option(name: .long, help: ArgumentHelp("The token: a UUID your app uses for the account.", valueName: "uuid"))
    var token: String

    @OptionGroup var action: ActionOptions

    @OptionGroup(title: "App Store Server API") var api: APIOptions

    func validate() throws {
        do {
            _ = try AppAccountTokenBody(token: token)
        } catch {
            throw ValidationError(error.commandLine + ".")
        }
    }

    func run() async throws {
        let original = originalTransactionId.trimmingCharacters(in: .whitespaces)
        let body = try AppAccountTokenBody(token: token)
        try await ActionFlow(
            action: .appAccountToken, ids: ActionIDs(originalTransactionID: original), options: action, api: api,
            extraLines: ["app account token to set: \(body.appAccountToken)"]
        ) { _ in try .setAppAccountToken(original, body) }.run()
    }
}

/// `receiptdash finish`: finish a transaction the app never finished.
struct Finish: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "finish",
        abstract: "Finish a transaction on the server (after its content was delivered), as the app's finish() would.")

    @Option(name: .long, help: ArgumentHelp("The transaction to finish.", valueName: "id"))
    var transactionId: String

    @OptionGroup var action: ActionOptions

    @OptionGroup(title: "App Store Server API") var api: APIOptions

    func run() async throws {
        let id = transactionId.trimmingCharacters(in: .whitespaces)
        try await ActionFlow(action: .finish, ids: ActionIDs(transactionID: id), options: action, api: api) { _ in
            try .finishTransaction(id)
        }.run()
    }
}

/// `receiptdash test-notification`: ask Apple to send a TEST notification, and whether it arrived.
struct TestNotification: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test-notification",
        abstract: "Ask Apple to send a TEST notification to the URL set in App Store Connect (--wait: and report its send attempts).")

    @Flag(name: .long, help: "Ask for the send attempts (once a second, up to 30 s) before answering.")
    var wait = false

    @OptionGroup var action: ActionOptions

    @OptionGroup(title: "App Store Server API") var api: APIOptions

    func run() async throws {
        try await ActionFlow(
            action: .testNotification, ids: ActionIDs(), options: action, api: api,
            extraLines: ["a TEST notification to the \(action.environment == .sandbox ? "sandbox" : "production") URL set in App Store Connect"],
            wait: wait
        ) { _ in .requestTestNotification() }.run()
    }
}
