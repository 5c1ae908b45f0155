import AppStoreAPI
import AppStoreClients
import ArgumentParser
import AuditTrail
import CommandOptions
import Foundation
import JSONWriting
import ReceiptCore
import UntrustedText

/// `receiptdash messaging status`: what Apple holds in one screen, per environment: the
/// realtime URL, images and messages with their states, the default message of each product
/// and locale asked for (the API has no list of defaults), and the gaps.
struct MessagingStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "What Apple holds: realtime URL, images, messages, defaults, and the gaps, per environment.",
        discussion: """
            Gaps: a product and locale with no default message; a default whose message is not \
            approved; a message or image not approved (PENDING or REJECTED: Apple cannot show it). \
            Apple offers no list of defaults: name the products and locales with --product-id and \
            --locale (each repeatable; every pair is asked). Without --environment, both.
            """)

    /// Rows of each list shown in text (the rest is counted; `--format json` has all): two
    /// environments fit 80x24.
    static let rowsShown = 3

    @Option(name: .long, help: ArgumentHelp("A product whose defaults to show (repeatable).", valueName: "id"))
    var productId: [String] = []

    @Option(name: .long, help: ArgumentHelp("A locale whose defaults to show (repeatable), e.g. en-US.", valueName: "code"))
    var locale: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "An audit database whose recorded message uploads say which images each message uses (the API does not): a message whose image is not approved is a gap. The states Apple gives are recorded there for receive --retention-path.",
            valueName: "path|url"))
    var db: String?

    @OptionGroup var options: MessagingReadOptions

    func validate() throws {
        if let db { _ = try AuditOpening.parse(db) }
        if productId.isEmpty != locale.isEmpty { throw ValidationError("--product-id and --locale go together: defaults are per product and locale.") }
        for product in productId {
            for code in locale {
                do throws(RetentionLimitError) { try RetentionLimits.checkDefault(productID: product, locale: code) } catch {
                    throw MessagingLimits.refusal(error)
                }
            }
        }
    }

    /// One environment as Apple answered.
    struct Snapshot {
        var environment: APIEnvironment
        var realtimeURL: String?
        var images: [GetImageListResponseItem] = []
        var messages: [GetMessageListResponseItem] = []
        /// Product, locale, message (nil: none set).
        var defaults: [(product: String, locale: String, message: String?)] = []
        var failure: APIFailure?
        /// Message id (upper case) → the images its recorded upload uses (`--db`).
        var uploadedImages: [String: [String]] = [:]

        /// The gaps, each a kind and its words.
        var gaps: [(kind: String, words: String)] {
            var out: [(String, String)] = []
            let states = Dictionary(messages.compactMap { m in m.messageIdentifier.map { ($0.uppercased(), m.messageState ?? "?") } }, uniquingKeysWith: { a, _ in a })
            for entry in defaults {
                guard let message = entry.message else {
                    out.append(("no-default", "\(entry.product) \(entry.locale): no default message"))
                    continue
                }
                let state = states[message.uppercased()]
                if state != RetentionContentState.approved.rawValue {
                    out.append(("default-not-approved", "\(entry.product) \(entry.locale): default message \(message) is \(state ?? "not in the message list")"))
                }
            }
            let imageStates = Dictionary(images.compactMap { i in i.imageIdentifier.map { ($0.uppercased(), i.imageState ?? "no state") } }, uniquingKeysWith: { a, _ in a })
            for message in messages {
                guard let id = message.messageIdentifier, let used = uploadedImages[id.uppercased()] else { continue }
                for image in used where imageStates[image.uppercased()] != RetentionContentState.approved.rawValue {
                    out.append(("message-image-not-approved", "message \(id) uses image \(image): \(imageStates[image.uppercased()] ?? "not uploaded")"))
                }
            }
            for message in messages where message.state != .approved {
                out.append(("message-not-approved", "message \(message.messageIdentifier ?? "?"): \(message.messageState ?? "no state"), cannot be shown"))
            }
            for image in images where image.state != .approved {
                out.append(("image-not-approved", "image \(image.imageIdentifier ?? "?"): \(image.imageState ?? "no state"), cannot be shown"))
            }
            return out
        }
    }

    func run() async throws {
        let environments: [APIEnvironment] = options.named.map { [$0] } ?? [.production, .sandbox]
        let pairs = productId.flatMap { product in locale.map { (product.trimmingCharacters(in: .whitespaces), $0) } }
        let uploads = try await recordedUploads()
        let snapshots = try await options.withClient { client in
            var out: [Snapshot] = []
            for environment in environments {
                var snapshot = await Self.snapshot(client, environment, pairs)
                snapshot.uploadedImages = uploads[environment.rawValue] ?? [:]
                out.append(snapshot)
            }
            return out
        }
        try await recordStates(snapshots)
        switch options.format {
        case .json: Console.standard.line(JSONOutput.text(of: .object(["environments": .array(snapshots.map(Self.json))])))
        case .text: Console.standard.output(snapshots.map(Self.text).joined())
        }
        if snapshots.contains(where: { $0.failure != nil }) { throw ExitStatus.failed }
    }

    /// With `--db`, what Apple said of each environment's images and messages is recorded in
    /// the trail: the realtime responder names only content it knows as `APPROVED`.
    func recordStates(_ snapshots: [Snapshot]) async throws {
        guard let db else { return }
        let store = try await AuditOpening.open(db)
        let now = Date()
        try await AuditStoreService.closing(store) {
            for s in snapshots where s.failure == nil {
                let images = s.images.compactMap { item in
                    item.imageIdentifier.map { RetentionContentItem(kind: .image, identifier: $0, state: item.imageState ?? "?", observedAt: now) }
                }
                let messages = s.messages.compactMap { item in
                    item.messageIdentifier.map {
                        RetentionContentItem(
                            kind: .message, identifier: $0, state: item.messageState ?? "?",
                            imageIdentifier: s.uploadedImages[$0.uppercased()]?.first, observedAt: now)
                    }
                }
                try await store.recordRetentionContent(images, kind: .image, environment: s.environment.rawValue)
                try await store.recordRetentionContent(messages, kind: .message, environment: s.environment.rawValue)
            }
        }
    }

    /// Per environment, message id → the images of its last upload Apple took, from the
    /// audit trail's `upload-message` rows (the body names the images, the plan the message).
    func recordedUploads() async throws -> [String: [String: [String]]] {
        guard let db else { return [:] }
        let store = try await AuditOpening.open(db, readOnly: true)
        let rows = try await AuditStoreService.closing(store) { try await store.actions(AuditActionQuery()) }
        var out: [String: [String: [String]]] = [:]
        // Oldest first: a later upload of the same id (after a delete) wins.
        for row in rows.sorted(by: { $0.at < $1.at }) where row.action == APIAction.uploadMessage.rawValue && row.result == ActionOutcome.success.rawValue {
            guard let environment = row.environment, let id = Self.messageID(inPlan: row.plan), let body = row.requestBody,
                let upload = try? JSONDecoder().decode(UploadMessageRequestBody.self, from: Data(body.utf8))
            else { continue }
            out[environment, default: [:]][id] = [upload.image?.imageIdentifier].compactMap { $0 } + (upload.bulletPoints ?? []).map(\.imageIdentifier)
        }
        return out
    }

    /// The message id of an `upload-message` plan (its `  message UUID` line), upper case.
    static func messageID(inPlan plan: String?) -> String? {
        plan?.split(separator: "\n").lazy.compactMap { line -> String? in
            let words = line.trimmingCharacters(in: .whitespaces).split(separator: " ")
            guard words.count == 2, words[0] == "message" else { return nil }
            return UUID(uuidString: String(words[1]))?.uuidString
        }.first
    }

    static func snapshot(_ client: AppStoreServerAPIClient, _ environment: APIEnvironment, _ pairs: [(String, String)]) async -> Snapshot {
        var snapshot = Snapshot(environment: environment)
        let url = await client.realtimeURL(environment: environment)
        switch url.result {
        case .success(let value): snapshot.realtimeURL = value.realtimeURL
        case .failure(let failure) where failure.apiError == .realtimeURLNotFound: break
        case .failure(let failure):
            snapshot.failure = failure
            return snapshot
        }
        let images = await client.imageList(environment: environment)
        guard let imageList = images.value else {
            snapshot.failure = images.failure
            return snapshot
        }
        snapshot.images = imageList.imageIdentifiers ?? []
        let messages = await client.messageList(environment: environment)
        guard let messageList = messages.value else {
            snapshot.failure = messages.failure
            return snapshot
        }
        snapshot.messages = messageList.messageIdentifiers ?? []
        for (product, locale) in pairs {
            let answer = await client.defaultMessage(productID: product, locale: locale, environment: environment)
            switch answer.result {
            case .success(let value): snapshot.defaults.append((product, locale, value.messageIdentifier))
            case .failure(let failure) where failure.apiError == .defaultMessageNotFound: snapshot.defaults.append((product, locale, nil))
            case .failure(let failure):
                snapshot.failure = failure
                return snapshot
            }
        }
        return snapshot
    }

    static func text(_ s: Snapshot) -> String {
        var out = "\(s.environment.rawValue):\n"
        if let failure = s.failure {
            let words = failure.apiError.map { "\($0.rawValue) \($0.explanation)" } ?? failure.reason
            return out + "  could not be read: \(SafeText.escaped(words))\n"
        }
        out += "  realtime URL: \(s.realtimeURL.map { SafeText.escaped($0) } ?? "none (Apple shows default messages)")\n"
        func counted(_ states: [String?]) -> String {
            guard !states.isEmpty else { return "" }
            let counts = Dictionary(states.map { ($0 ?? "?", 1) }, uniquingKeysWith: +)
            return " (" + counts.keys.sorted().map { "\(counts[$0] ?? 0) \(SafeText.escaped($0))" }.joined(separator: ", ") + ")"
        }
        out += "  images: \(s.images.count)\(counted(s.images.map(\.imageState))); messages: \(s.messages.count)\(counted(s.messages.map(\.messageState)))\n"
        if !s.defaults.isEmpty {
            let set = s.defaults.filter { $0.message != nil }
            out += "  defaults: \(set.count) of \(s.defaults.count) set\n"
            // The message id first: a long product id wraps, never the id.
            out += capped(set.map { "\(SafeText.escaped($0.locale)) \(SafeText.escaped($0.message ?? "")) \(SafeText.escaped($0.product))" })
        }
        let gaps = s.gaps
        out += "  gaps: \(gaps.isEmpty ? "none" : String(gaps.count))\n"
        out += capped(gaps.map { SafeText.escaped($0.words) })
        return out
    }

    /// At most ``rowsShown`` rows, the last saying how many more when there are.
    static func capped(_ rows: [String]) -> String {
        let shown = rows.count <= rowsShown ? rows : Array(rows.prefix(rowsShown - 1)) + ["… and \(rows.count - rowsShown + 1) more (--format json lists all)"]
        return shown.map { "    \($0)\n" }.joined()
    }

    static func json(_ s: Snapshot) -> JSONValue {
        var object: [String: JSONValue] = ["environment": .string(s.environment.rawValue)]
        if let failure = s.failure {
            object["error"] = .object([
                "code": .string(failure.code.rawValue), "message": .string(failure.reason),
                "api_error": failure.apiError.map { .integer(Int64($0.rawValue)) } ?? .null,
            ])
            return .object(object)
        }
        object["realtime_url"] = s.realtimeURL.map(JSONValue.string) ?? .null
        object["images"] = .array(s.images.map(MessagingJSON.image))
        object["messages"] = .array(s.messages.map(MessagingJSON.message))
        object["defaults"] = .array(
            s.defaults.map {
                .object([
                    "product_id": .string($0.product), "locale": .string($0.locale), "message_identifier": $0.message.map(JSONValue.string) ?? .null,
                ])
            })
        object["gaps"] = .array(s.gaps.map { .object(["kind": .string($0.kind), "words": .string($0.words)]) })
        return .object(object)
    }
}
