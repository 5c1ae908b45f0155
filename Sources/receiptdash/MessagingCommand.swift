import AppStoreAPI
import AppStoreClients
import ArgumentParser
import CommandOptions
import Foundation
import JSONWriting
import ReceiptCore
import UntrustedText

extension RetentionImageSize: ExpressibleByArgument {
    public init?(argument: String) {
        switch argument.lowercased() {
        case "full", "full_size", "full-size": self = .fullSize
        case "bullet", "bullet_point", "bullet-point": self = .bulletPoint
        default: return nil
        }
    }
    public static var allValueStrings: [String] { ["full", "bullet"] }
}

extension RetentionHeaderPosition: ExpressibleByArgument {
    public init?(argument: String) {
        switch argument.lowercased() {
        case "above-body", "above_body": self = .aboveBody
        case "above-image", "above_image": self = .aboveImage
        default: return nil
        }
    }
    public static var allValueStrings: [String] { ["above-body", "above-image"] }
}

/// `receiptdash messaging`: Apple's Retention Messaging content (images, messages, default
/// messages, the realtime URL) and what Apple holds of it.
struct Messaging: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "messaging",
        abstract: "Manage Retention Messaging: images, messages, default messages and the realtime URL.",
        discussion: """
            Apple shows a retention message when a subscriber taps Cancel Subscription: the answer \
            of your realtime URL, or the default message of the product and locale. Every limit \
            (header 66, body 144, alt text 150, 5 bullets of 66, PNG sizes, no transparency, https \
            URL of at most 256) is checked before anything is sent, naming Apple's error code.

            Uploads, deletes and sets are writes: they name no customer, so --environment \
            production or sandbox is required; the plan is shown and confirmed (or --yes), \
            --dry-run sends nothing, read-only refuses them, and each is recorded in the audit \
            database. Sandbox approves uploads at once; production reviews them (PENDING).

            Examples:
              receiptdash messaging image upload banner.png --id 7E3FB20B-4CDB-47CC-936D-99D65F608138 --environment sandbox
              receiptdash messaging message upload --id 0B7C…  --header "Stay a little longer" \\
                --body "Your plan keeps every feature." --environment sandbox --yes
              receiptdash messaging default set --product-id com.example.monthly --locale en-US --message 0B7C… --environment sandbox
              receiptdash messaging status --product-id com.example.monthly --locale en-US --locale fr-FR

            Exit status: 0 done; 1 refused by Apple, not found or failed; 64 usage, a limit broken \
            (nothing sent), read-only, or no --yes without a terminal.
            """,
        subcommands: [
            MessagingImage.self, MessagingMessage.self, MessagingDefault.self, MessagingRealtimeURL.self, MessagingPerformanceTest.self,
            MessagingStatus.self, MessagingRulesCommand.self,
        ])
}

/// What every read of `messaging` takes: the environment, the format, the API options.
struct MessagingReadOptions: ParsableArguments {
    @Option(name: .long, help: "production or sandbox (these endpoints name no customer, so auto cannot choose).")
    var environment: APIEnvironmentSelection = .auto

    @Option(name: .long, help: "Output format: text or json.")
    var format: OutputFormat = .text

    @OptionGroup var tls: TLSTrustOptions

    @OptionGroup(title: "App Store Server API") var api: APIOptions

    /// The environment said, or nil for `auto`.
    var named: APIEnvironment? {
        switch environment {
        case .production: .production
        case .sandbox: .sandbox
        case .auto: nil
        }
    }

    func requireEnvironment(_ command: String) throws -> APIEnvironment {
        guard let named else {
            throw ValidationError("\(command) names no customer, so auto cannot tell production from sandbox: say --environment production or --environment sandbox.")
        }
        return named
    }

    /// Runs `body` with a client (shut down after); a setting that cannot be used ends in 64.
    func withClient<T: Sendable>(_ body: (AppStoreServerAPIClient) async throws -> T) async throws -> T {
        let client: AppStoreServerAPIClient
        do {
            client = try api.makeClient(try api.credentials(), caFile: tls.caFile)
        } catch let error as APIOptionsError {
            ErrorOutput.write(code: "configuration", message: error.description, format: format, to: .standard)
            throw ExitStatus.usage
        }
        do {
            let value = try await body(client)
            try? await client.shutdown()
            return value
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// A read's failure said (text on standard error, JSON on standard output); exit 1.
    func fail(_ failure: APIFailure, _ environment: APIEnvironment) -> ExitCode {
        let message = failure.apiError.map { "\(environment.rawValue): \($0.rawValue) \($0.explanation)" } ?? failure.reason
        ErrorOutput.write(code: failure.code.rawValue, message: message, format: format, to: .standard)
        return ExitStatus.failed
    }
}

/// Text from Apple, as a terminal may show it.
private func shown(_ text: String?) -> String { text.map { SafeText.escaped($0) } ?? "?" }

// MARK: image

struct MessagingImage: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "image", abstract: "Upload, list or delete retention images (PNG, no transparency).",
        subcommands: [MessagingImageUpload.self, MessagingImageList.self, MessagingImageDelete.self])
}

struct MessagingImageList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "The images Apple holds, with their review states.")

    @OptionGroup var options: MessagingReadOptions

    func run() async throws {
        let environment = try options.requireEnvironment("image list")
        let answer = try await options.withClient { await $0.imageList(environment: environment) }
        guard let list = answer.value else { throw options.fail(answer.failure ?? APIFailure(.invalidResponse, "no answer"), environment) }
        let items = list.imageIdentifiers ?? []
        switch options.format {
        case .json:
            Console.standard.line(
                JSONOutput.text(
                    of: .object([
                        "environment": .string(environment.rawValue),
                        "images": .array(items.map { MessagingJSON.image($0) }),
                    ])))
        case .text:
            var out = "images in \(environment.rawValue): \(items.count)\n"
            for item in items { out += "  \(shown(item.imageIdentifier))  \(shown(item.imageState))  \(shown(item.imageSize ?? "FULL_SIZE (not sent)"))\n" }
            Console.standard.output(out)
        }
    }
}

// MARK: message

struct MessagingMessage: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "message", abstract: "Upload, list or delete retention messages.",
        subcommands: [MessagingMessageUpload.self, MessagingMessageList.self, MessagingMessageDelete.self])
}

struct MessagingMessageList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "The messages Apple holds, with their review states.")

    @OptionGroup var options: MessagingReadOptions

    func run() async throws {
        let environment = try options.requireEnvironment("message list")
        let answer = try await options.withClient { await $0.messageList(environment: environment) }
        guard let list = answer.value else { throw options.fail(answer.failure ?? APIFailure(.invalidResponse, "no answer"), environment) }
        let items = list.messageIdentifiers ?? []
        switch options.format {
        case .json:
            Console.standard.line(
                JSONOutput.text(
                    of: .object([
                        "environment": .string(environment.rawValue),
                        "messages": .array(items.map { MessagingJSON.message($0) }),
                    ])))
        case .text:
            var out = "messages in \(environment.rawValue): \(items.count)\n"
            for item in items { out += "  \(shown(item.messageIdentifier))  \(shown(item.messageState))\n" }
            Console.standard.output(out)
        }
    }
}

// MARK: default

struct MessagingDefault: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "default", abstract: "Set, get or delete the default message of a product and locale.",
        subcommands: [MessagingDefaultSet.self, MessagingDefaultGet.self, MessagingDefaultDelete.self])
}

/// `--product-id` and `--locale` of the default-message commands.
struct DefaultKeyOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("An auto-renewable subscription's product ID.", valueName: "id"))
    var productId: String

    @Option(name: .long, help: ArgumentHelp("An App Store locale code, e.g. en-US.", valueName: "code"))
    var locale: String

    func validate() throws {
        do throws(RetentionLimitError) { try RetentionLimits.checkDefault(productID: productId, locale: locale) } catch {
            throw MessagingLimits.refusal(error)
        }
    }
}

struct MessagingDefaultGet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "The default message of a product and locale.")

    @OptionGroup var key: DefaultKeyOptions
    @OptionGroup var options: MessagingReadOptions

    func run() async throws {
        let environment = try options.requireEnvironment("default get")
        let (product, locale) = (key.productId, key.locale)
        let answer = try await options.withClient { await $0.defaultMessage(productID: product, locale: locale, environment: environment) }
        guard let value = answer.value else { throw options.fail(answer.failure ?? APIFailure(.invalidResponse, "no answer"), environment) }
        switch options.format {
        case .json:
            Console.standard.line(
                JSONOutput.text(
                    of: .object([
                        "environment": .string(environment.rawValue), "product_id": .string(product), "locale": .string(locale),
                        "message_identifier": value.messageIdentifier.map(JSONValue.string) ?? .null,
                    ])))
        case .text:
            Console.standard.output(
                "default message of \(SafeText.escaped(product)) in \(SafeText.escaped(locale)) (\(environment.rawValue)): \(shown(value.messageIdentifier))\n")
        }
    }
}

// MARK: realtime-url

struct MessagingRealtimeURL: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "realtime-url", abstract: "Set, get or delete the URL Apple asks for a retention message in real time.",
        subcommands: [MessagingRealtimeURLSet.self, MessagingRealtimeURLGet.self, MessagingRealtimeURLDelete.self])
}

struct MessagingRealtimeURLGet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "The realtime URL of an environment.")

    @OptionGroup var options: MessagingReadOptions

    func run() async throws {
        let environment = try options.requireEnvironment("realtime-url get")
        let answer = try await options.withClient { await $0.realtimeURL(environment: environment) }
        guard let value = answer.value else { throw options.fail(answer.failure ?? APIFailure(.invalidResponse, "no answer"), environment) }
        switch options.format {
        case .json:
            Console.standard.line(
                JSONOutput.text(
                    of: .object(["environment": .string(environment.rawValue), "realtime_url": value.realtimeURL.map(JSONValue.string) ?? .null])))
        case .text:
            Console.standard.output("realtime URL in \(environment.rawValue): \(shown(value.realtimeURL))\n")
        }
    }
}

/// The JSON of list items (keys snake_case, Apple's values as sent).
enum MessagingJSON {
    static func image(_ item: GetImageListResponseItem) -> JSONValue {
        .object([
            "image_identifier": item.imageIdentifier.map(JSONValue.string) ?? .null, "state": item.imageState.map(JSONValue.string) ?? .null,
            "size": item.imageSize.map(JSONValue.string) ?? .null,
        ])
    }

    static func message(_ item: GetMessageListResponseItem) -> JSONValue {
        .object([
            "message_identifier": item.messageIdentifier.map(JSONValue.string) ?? .null,
            "state": item.messageState.map(JSONValue.string) ?? .null,
        ])
    }
}

/// A limit broken, said before anything is sent (exit 64).
enum MessagingLimits {
    static func refusal(_ error: RetentionLimitError) -> ValidationError {
        ValidationError("nothing was sent: \(error.reason) [\(error.code.rawValue)].")
    }
}
