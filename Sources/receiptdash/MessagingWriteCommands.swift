import AppStoreAPI
import AppStoreClients
import ArgumentParser
import CommandOptions
import Foundation
import ReceiptCore
import UntrustedText

// The writes of `receiptdash messaging`: each checks Apple's limits before anything is sent,
// then goes through the one write gate (`ActionFlow` → `ActionSession`: read-only, intent
// recorded, plan, confirm or --yes, --dry-run, outcome from Apple's answer).

/// An identifier flag or argument as Apple's library sends it, or the limit it breaks.
private func uuid(_ id: String) throws -> String {
    do throws(RetentionLimitError) { return try RetentionLimits.identifier(id) } catch { throw MessagingLimits.refusal(error) }
}

// MARK: image

struct MessagingImageUpload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload", abstract: "Upload a PNG (no transparency; full: 3840 wide, 160–2160 tall; bullet: 1024 × 1024).")

    /// Largest file read (Apple's own limit is unconfirmed; this bounds what is held in memory).
    static let maximumFileBytes = 64 * 1024 * 1024

    @Argument(help: ArgumentHelp("The PNG file.", valueName: "file"))
    var file: String

    @Option(name: .long, help: ArgumentHelp("The image's identifier, a UUID you choose.", valueName: "uuid"))
    var id: String

    @Option(name: .long, help: "full (3840 px wide) or bullet (1024 × 1024, for bullet points).")
    var size: RetentionImageSize = .fullSize

    @OptionGroup var action: ActionOptions
    @OptionGroup(title: "App Store Server API") var api: APIOptions

    func validate() throws { _ = try uuid(id) }

    func run() async throws {
        let id = try uuid(self.id)
        let png = try Self.read(file)
        let header: PNGCheck.Header
        do throws(RetentionLimitError) { header = try PNGCheck.check(png, size: size) } catch {
            throw MessagingLimits.refusal(error)
        }
        let size = size
        try await ActionFlow(
            action: .uploadImage, ids: ActionIDs(), options: action, api: api,
            extraLines: ["image \(id), \(size.rawValue)", "\(header.width) × \(header.height) px, \(png.count) bytes, from \(file)"]
        ) { _ in try .uploadImage(id, size: size, png: png) }.run()
    }

    static func read(_ path: String) throws -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ValidationError("nothing was sent: \(SafeText.escaped(path)) cannot be read.")
        }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: maximumFileBytes + 1)) ?? Data()
        guard data.count <= maximumFileBytes else {
            throw ValidationError("nothing was sent: \(SafeText.escaped(path)) is larger than \(maximumFileBytes / 1024 / 1024) MiB.")
        }
        return [UInt8](data)
    }
}

struct MessagingImageDelete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete an image no message uses.")

    @Argument(help: ArgumentHelp("The image's identifier.", valueName: "uuid"))
    var id: String

    @OptionGroup var action: ActionOptions
    @OptionGroup(title: "App Store Server API") var api: APIOptions

    func validate() throws { _ = try uuid(id) }

    func run() async throws {
        let id = try uuid(self.id)
        try await ActionFlow(action: .deleteImage, ids: ActionIDs(), options: action, api: api, extraLines: ["delete image \(id)"]) { _ in
            try .deleteImage(id)
        }.run()
    }
}

// MARK: message

struct MessagingMessageUpload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload", abstract: "Upload a message: header (66), body (144), an optional image, up to 5 bullet points.")

    @Option(name: .long, help: ArgumentHelp("The message's identifier, a UUID you choose.", valueName: "uuid"))
    var id: String

    @Option(name: .long, help: ArgumentHelp("The header, at most 66 characters.", valueName: "text"))
    var header: String

    @Option(name: .long, help: ArgumentHelp("The body, at most 144 characters.", valueName: "text"))
    var body: String

    @Option(name: .long, help: ArgumentHelp("A full-size image uploaded before (needs --alt-text).", valueName: "uuid"))
    var image: String?

    @Option(name: .long, help: ArgumentHelp("The image's alternative text, at most 150 characters.", valueName: "text"))
    var altText: String?

    @Option(name: .long, help: "above-body (Apple's default) or above-image (needs --image).")
    var headerPosition: RetentionHeaderPosition?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A bullet point: its text (66), a bullet image's UUID and its alt text (150), split at the UUID (repeatable, at most 5).",
            valueName: "text,uuid,alt"))
    var bullet: [String] = []

    @OptionGroup var action: ActionOptions
    @OptionGroup(title: "App Store Server API") var api: APIOptions

    func validate() throws { _ = try checkedBody() }

    /// The body with every limit checked, or the first limit broken.
    func checkedBody() throws -> (id: String, body: UploadMessageRequestBody) {
        let id = try uuid(self.id)
        if (image == nil) != (altText == nil) { throw ValidationError("--image and --alt-text go together: Apple requires alternative text for an image.") }
        var bullets: [RetentionBulletPoint] = []
        for given in bullet {
            guard let parsed = Self.bullet(given) else {
                throw ValidationError("--bullet takes TEXT,IMAGE_UUID,ALT_TEXT (the UUID of an image uploaded with --size bullet), not \(SafeText.escaped(given)).")
            }
            bullets.append(parsed)
        }
        let request = UploadMessageRequestBody(
            header: header, body: body, image: image.map { UploadMessageImage(imageIdentifier: $0, altText: altText ?? "") },
            headerPosition: headerPosition, bulletPoints: bullets.isEmpty ? nil : bullets)
        do throws(RetentionLimitError) { return (id, try RetentionLimits.checked(request)) } catch { throw MessagingLimits.refusal(error) }
    }

    /// `TEXT,UUID,ALT`, split at the first field that is a UUID (text and alt text may hold commas).
    static func bullet(_ text: String) -> RetentionBulletPoint? {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard let index = parts.indices.first(where: { $0 > 0 && UUID(uuidString: parts[$0].trimmingCharacters(in: .whitespaces)) != nil }),
            index < parts.count - 1
        else { return nil }
        return RetentionBulletPoint(
            text: parts[..<index].joined(separator: ","), imageIdentifier: parts[index].trimmingCharacters(in: .whitespaces),
            altText: parts[(index + 1)...].joined(separator: ","))
    }

    func run() async throws {
        let (id, body) = try checkedBody()
        var lines = ["message \(id)", "header: \(body.header)", "body: \(body.body)"]
        if let image = body.image { lines.append("image: \(image.imageIdentifier) (alt: \(image.altText))") }
        if let position = body.headerPosition { lines.append("header position: \(position.rawValue)") }
        for (index, bullet) in (body.bulletPoints ?? []).enumerated() {
            lines.append("bullet \(index + 1): \(bullet.text) (image \(bullet.imageIdentifier), alt: \(bullet.altText))")
        }
        try await ActionFlow(action: .uploadMessage, ids: ActionIDs(), options: action, api: api, extraLines: lines) { _ in
            try .uploadMessage(id, body)
        }.run()
    }
}

struct MessagingMessageDelete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a message.")

    @Argument(help: ArgumentHelp("The message's identifier.", valueName: "uuid"))
    var id: String

    @OptionGroup var action: ActionOptions
    @OptionGroup(title: "App Store Server API") var api: APIOptions

    func validate() throws { _ = try uuid(id) }

    func run() async throws {
        let id = try uuid(self.id)
        try await ActionFlow(action: .deleteMessage, ids: ActionIDs(), options: action, api: api, extraLines: ["delete message \(id)"]) { _ in
            try .deleteMessage(id)
        }.run()
    }
}

// MARK: default

struct MessagingDefaultSet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Set the default message of a product and locale (the message and its images approved).")

    @OptionGroup var key: DefaultKeyOptions

    @Option(name: .long, help: ArgumentHelp("The message's identifier.", valueName: "uuid"))
    var message: String

    @OptionGroup var action: ActionOptions
    @OptionGroup(title: "App Store Server API") var api: APIOptions

    func validate() throws { _ = try uuid(message) }

    func run() async throws {
        let message = try uuid(self.message)
        let (product, locale) = (key.productId.trimmingCharacters(in: .whitespaces), key.locale)
        try await ActionFlow(
            action: .configureDefaultMessage, ids: ActionIDs(productID: product), options: action, api: api,
            extraLines: ["default message of \(product) in \(locale) → message \(message)"]
        ) { _ in
            try .configureDefaultMessage(productID: product, locale: locale, DefaultConfigurationRequest(messageIdentifier: message))
        }.run()
    }
}

struct MessagingDefaultDelete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete the default message of a product and locale.")

    @OptionGroup var key: DefaultKeyOptions
    @OptionGroup var action: ActionOptions
    @OptionGroup(title: "App Store Server API") var api: APIOptions

    func run() async throws {
        let (product, locale) = (key.productId.trimmingCharacters(in: .whitespaces), key.locale)
        try await ActionFlow(
            action: .deleteDefaultMessage, ids: ActionIDs(productID: product), options: action, api: api,
            extraLines: ["delete the default message of \(product) in \(locale)"]
        ) { _ in try .deleteDefaultMessage(productID: product, locale: locale) }.run()
    }
}

// MARK: realtime-url

struct MessagingRealtimeURLSet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Set the realtime URL (https, at most 256 characters; production only after a passed performance test).")

    @Argument(help: ArgumentHelp("The URL Apple posts realtime requests to.", valueName: "url"))
    var url: String

    @OptionGroup var action: ActionOptions
    @OptionGroup(title: "App Store Server API") var api: APIOptions

    func validate() throws {
        do throws(RetentionLimitError) { _ = try RetentionLimits.checked(RealtimeUrlRequest(realtimeURL: url)) } catch {
            throw MessagingLimits.refusal(error)
        }
    }

    func run() async throws {
        let body = RealtimeUrlRequest(realtimeURL: url)
        try await ActionFlow(action: .configureRealtimeURL, ids: ActionIDs(), options: action, api: api, extraLines: ["realtime URL → \(url)"]) { _ in
            .configureRealtimeURL(body)
        }.run()
    }
}

struct MessagingRealtimeURLDelete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete the realtime URL (Apple then shows default messages).")

    @OptionGroup var action: ActionOptions
    @OptionGroup(title: "App Store Server API") var api: APIOptions

    func run() async throws {
        try await ActionFlow(action: .deleteRealtimeURL, ids: ActionIDs(), options: action, api: api, extraLines: ["delete the realtime URL"]) { _ in
            .deleteRealtimeURL()
        }.run()
    }
}
