import AppStoreAPI
import ArgumentParser
import Foundation
import UntrustedText

/// The filters of a look-up, as Apple's Get Transaction History v2 and Get All Subscription
/// Statuses take them: every history page is asked with the same ones.
public struct LookupFilterOptions: ParsableArguments {
    public init() {}

    @Option(name: .long, help: ArgumentHelp("Only transactions bought at or after this time (ISO 8601, or a date).", valueName: "time"))
    public var start: String?

    @Option(name: .long, help: ArgumentHelp("Only transactions bought before this time (ISO 8601, or a date).", valueName: "time"))
    public var end: String?

    @Option(name: .long, help: ArgumentHelp("Only this product (repeat for several).", valueName: "id"))
    public var productId: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp("Only this kind: auto-renewable, non-renewable, consumable or non-consumable (repeat for several).", valueName: "type"))
    public var productType: [String] = []

    @Option(name: .long, help: ArgumentHelp("Only this subscription group (repeat for several).", valueName: "id"))
    public var group: [String] = []

    @Option(name: .long, help: ArgumentHelp("Only purchased or family-shared transactions.", valueName: "ownership"))
    public var ownership: String?

    @Flag(name: .long, help: "Only revoked (refunded) transactions.")
    public var revoked = false

    @Flag(name: .long, help: "Only transactions not revoked.")
    public var notRevoked = false

    @Option(name: .long, help: ArgumentHelp("History order: ascending or descending.", valueName: "order"))
    public var sort: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Only subscriptions in this state: active, expired, billing-retry, grace or revoked (repeat for several).", valueName: "state"))
    public var status: [String] = []

    public static let productTypes: [String: TransactionHistoryFilter.ProductType] = [
        "auto-renewable": .autoRenewable, "non-renewable": .nonRenewable, "consumable": .consumable, "non-consumable": .nonConsumable,
    ]
    public static let ownerships: [String: TransactionHistoryFilter.Ownership] = ["purchased": .purchased, "family-shared": .familyShared]
    public static let sorts: [String: TransactionHistoryFilter.Sort] = ["ascending": .ascending, "descending": .descending]

    public func validate() throws {
        _ = try filters()
    }

    /// The filters, or a usage error that names the flag and the words it takes.
    public func filters() throws -> LookupFilters {
        func word<T>(_ flag: String, _ value: String, in table: [String: T]) throws -> T {
            guard let found = table[value.lowercased()] else {
                throw ValidationError("\(flag) takes \(table.keys.sorted().joined(separator: ", ")), not \(SafeText.escaped(value)).")
            }
            return found
        }
        try TimeArgument.check("--start", start)
        try TimeArgument.check("--end", end)
        let startDate = start.flatMap(TimeArgument.parse)
        let endDate = end.flatMap(TimeArgument.parse)
        if let startDate, let endDate, startDate >= endDate { throw ValidationError("--start must be before --end.") }
        if revoked && notRevoked { throw ValidationError("Give --revoked or --not-revoked, not both.") }
        for (flag, values) in [("--product-id", productId), ("--group", group)] where values.contains(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) {
            throw ValidationError("\(flag) is empty.")
        }
        let history = TransactionHistoryFilter(
            startDate: startDate, endDate: endDate, productIDs: productId,
            productTypes: try productType.map { try word("--product-type", $0, in: Self.productTypes) },
            sort: try sort.map { try word("--sort", $0, in: Self.sorts) }, subscriptionGroupIdentifiers: group,
            ownership: try ownership.map { try word("--ownership", $0, in: Self.ownerships) },
            revoked: revoked ? true : notRevoked ? false : nil)
        return LookupFilters(history: history, statuses: try status.map { try word("--status", $0, in: LookupFilters.statusNames) })
    }
}
