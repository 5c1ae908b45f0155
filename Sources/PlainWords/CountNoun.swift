/// A noun said with a count, the one way every output pluralises: `CountNoun.attempt.count(1)`
/// is "1 attempt", `.count(2)` "2 attempts", `.count(0)` "0 attempts". ``every`` lists each
/// noun counted anywhere (a golden file renders them all with 0, 1 and 2).
public struct CountNoun: Sendable, Hashable {
    public let singular: String
    public let plural: String

    /// `plural` defaults to `singular` + "s".
    public init(_ singular: String, plural: String? = nil) {
        self.singular = singular
        self.plural = plural ?? singular + "s"
    }

    /// "N noun" or "N nouns".
    public func count(_ n: Int) -> String { "\(n) \(word(n))" }

    /// The noun alone, as `n` takes it ("problem" for 1, "problems" otherwise).
    public func word(_ n: Int) -> String { n == 1 ? singular : plural }
}

extension CountNoun {
    public static let attempt = CountNoun("attempt")
    public static let certificate = CountNoun("certificate")
    public static let character = CountNoun("character")
    public static let consumablePurchase = CountNoun("consumable purchase")
    public static let customer = CountNoun("customer")
    public static let day = CountNoun("day")
    public static let delivery = CountNoun("delivery", plural: "deliveries")
    public static let duplicate = CountNoun("duplicate")
    public static let event = CountNoun("event")
    public static let file = CountNoun("file")
    public static let historyPage = CountNoun("history page")
    public static let input = CountNoun("input")
    public static let keyBesidesSignedPayload = CountNoun("key")
    public static let issue = CountNoun("issue")
    public static let line = CountNoun("line")
    public static let newInput = CountNoun("new input")
    public static let notification = CountNoun("notification")
    public static let oneTimePurchase = CountNoun("one-time purchase")
    public static let originalTransaction = CountNoun("original transaction")
    public static let period = CountNoun("period")
    public static let problem = CountNoun("problem")
    public static let purchase = CountNoun("purchase")
    public static let read = CountNoun("read")
    public static let realtimeRequest = CountNoun("realtime request")
    public static let consumptionRequest = CountNoun("consumption request")
    public static let policy = CountNoun("policy", plural: "policies")
    public static let receipt = CountNoun("receipt")
    public static let registeredTarget = CountNoun("registered target")
    public static let remainingMonthlyPayment = CountNoun("remaining monthly payment")
    public static let renewal = CountNoun("renewal")
    public static let retry = CountNoun("retry", plural: "retries")
    public static let root = CountNoun("extra trusted root")
    public static let row = CountNoun("row")
    public static let rule = CountNoun("rule")
    public static let signature = CountNoun("signature")
    public static let signedItem = CountNoun("signed item")
    public static let subCA = CountNoun("sub-CA")
    public static let subscription = CountNoun("subscription")
    public static let transaction = CountNoun("transaction")
    public static let `try` = CountNoun("try", plural: "tries")

    /// Every noun above, for the golden file of count phrases.
    public static let every: [CountNoun] = [
        attempt, certificate, character, consumablePurchase, consumptionRequest, customer, day, delivery, duplicate, event, file, historyPage, input, issue, keyBesidesSignedPayload,
        line, newInput, notification, oneTimePurchase, originalTransaction, period, policy, problem, purchase, read, realtimeRequest, receipt, registeredTarget, remainingMonthlyPayment, renewal,
        retry, root, row, rule, signature, signedItem, subCA, subscription, transaction, `try`,
    ]
}
