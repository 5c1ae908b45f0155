import AppStoreAPI
import Foundation
import ReceiptCore

/// Retention Messaging's 12 content endpoints as Apple answers them (fact sheet
/// retention-messaging.md §1, §4): images, messages, default messages and the realtime URL,
/// each environment on its own, with Apple's validation, codes, quotas, review states and,
/// when asked (``RetentionContentStore/enforceRateLimits(_:)``), its rate limits. The
/// performance test's two endpoints are ``RetentionPerformanceTest``'s.
extension ServerAPIService {
    /// Upload, list and delete paths under `/inApps/v1/messaging/`; nil for any other path.
    func routeRetention(_ method: String, _ segments: [String], body: [UInt8], _ context: Context) -> ServerAPIReply? {
        guard segments.count >= 4, segments[0] == "inApps", segments[1] == "v1", segments[2] == "messaging" else { return nil }
        let rest = Array(segments[3...])
        let endpoint: APIEndpointKind
        switch (method, rest.count, rest[0]) {
        case ("GET", 2, "image") where rest[1] == "list": endpoint = .imageList
        case ("PUT", 2, "image"): endpoint = .uploadImage
        case ("DELETE", 2, "image"): endpoint = .deleteImage
        case ("GET", 2, "message") where rest[1] == "list": endpoint = .messageList
        case ("PUT", 2, "message"): endpoint = .uploadMessage
        case ("DELETE", 2, "message"): endpoint = .deleteMessage
        case ("PUT", 3, "default"): endpoint = .configureDefaultMessage
        case ("DELETE", 3, "default"): endpoint = .deleteDefaultMessage
        case ("GET", 3, "default"): endpoint = .defaultMessage
        case ("PUT", 2, "realtime") where rest[1] == "url": endpoint = .configureRealtimeURL
        case ("DELETE", 2, "realtime") where rest[1] == "url": endpoint = .deleteRealtimeURL
        case ("GET", 2, "realtime") where rest[1] == "url": endpoint = .realtimeURL
        default: return nil
        }
        if let until = retention.takeRate(endpoint, context.environment, nowMS: context.nowMS) {
            var reply = error(429, .rateLimitExceeded, "Rate limit exceeded.")
            reply.headers.append(("Retry-After", String(until)))
            return reply
        }
        let environment = context.environment
        let reply: ServerAPIReply
        switch endpoint {
        case .imageList: return imageList(environment)
        case .messageList: return messageList(environment)
        case .defaultMessage: return defaultMessage(product: rest[1], locale: rest[2], environment)
        case .realtimeURL: return realtimeURL(environment)
        case .uploadImage: reply = uploadImage(rest[1], size: context.query.first("imageSize"), png: body, environment)
        case .deleteImage: reply = deleteImage(rest[1], environment)
        case .uploadMessage: reply = uploadMessage(rest[1], body, environment)
        case .deleteMessage: reply = deleteMessage(rest[1], environment)
        case .configureDefaultMessage: reply = configureDefault(product: rest[1], locale: rest[2], body, environment)
        case .deleteDefaultMessage: reply = deleteDefault(product: rest[1], locale: rest[2], environment)
        case .configureRealtimeURL: reply = configureRealtimeURL(body, environment)
        default: reply = deleteRealtimeURL(environment)
        }
        // An image is logged by its size, not its bytes.
        let logged = endpoint == .uploadImage ? Array("(\(body.count) bytes of image/png)".utf8) : body
        return recordWrite(method, segments, body: logged, context, reply)
    }

    /// Whether `path` is the API's control (`/control`, `/control/…`), which the API answers
    /// when it shares a port with verifyReceipt.
    public static func isControlPath(_ path: String) -> Bool { path == "/control" || path.hasPrefix("/control/") }

    /// `POST /control?approve=UUID` (or `?reject=UUID`, `&environment=sandbox`): Apple's
    /// review of an uploaded image or message. On the API port, without a token; nil for
    /// another path.
    func answerRetentionControl(_ request: ServerAPIRequest) -> ServerAPIReply? {
        let parts = request.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.first == "/control" else { return nil }
        guard request.method == "POST" else { return text(405, "use POST /control?approve=UUID\n") }
        guard let query = Query(parts.count > 1 ? String(parts[1]) : ""), !query.items.isEmpty else {
            return text(400, "give ?approve=UUID or ?reject=UUID (and &environment=sandbox for sandbox)\n")
        }
        var environment = APIEnvironment.production
        switch query.first("environment")?.lowercased() {
        case nil, "production": break
        case "sandbox": environment = .sandbox
        default: return text(400, "environment is production or sandbox\n")
        }
        let wanted: (RetentionContentState, String)
        if let id = query.first("approve") {
            wanted = (.approved, id)
        } else if let id = query.first("reject") {
            wanted = (.rejected, id)
        } else {
            return text(400, "give ?approve=UUID or ?reject=UUID\n")
        }
        guard let kind = retention.review(wanted.1, to: wanted.0, in: environment) else {
            return text(404, "no image or message \(wanted.1.prefix(64)) in \(environment.rawValue)\n")
        }
        return text(200, "\(kind) \(wanted.1) is \(wanted.0.rawValue) in \(environment.rawValue)\n")
    }

    private func text(_ status: Int, _ words: String) -> ServerAPIReply {
        ServerAPIReply(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array(words.utf8))
    }

    private func ok() -> ServerAPIReply { ServerAPIReply(status: 200) }

    private func badRequest() -> ServerAPIReply { error(400, .generalBadRequest, "Invalid request.") }

    // MARK: Images

    private func uploadImage(_ id: String, size sizeText: String?, png: [UInt8], _ environment: APIEnvironment) -> ServerAPIReply {
        guard let key = RetentionContentStore.key(id) else { return badRequest() }
        guard let size = sizeText.map(RetentionImageSize.init(rawValue:)) ?? .fullSize else {
            return error(400, .invalidImageSize, "Invalid request. The image's size is invalid.")
        }
        do throws(RetentionLimitError) {
            try PNGCheck.check(png, size: size)
        } catch {
            return error.code == .imageSizeInvalid
                ? self.error(400, .invalidImageSize, "Invalid request. The image's size is invalid.")
                : self.error(400, .invalidImage, "Invalid request. The image is invalid.")
        }
        return retention.state.withLock { s -> ServerAPIReply in
            guard var content = s.content[environment] else { return ServerAPIReply(status: 500) }
            if content.images[key] != nil { return error(409, .imageAlreadyExists, "Invalid request. The image already exists.") }
            guard content.images.count < RetentionLimits.maximumImages else {
                return error(403, .maximumImagesReached, "Maximum number of images reached.")
            }
            content.images[key] = RetentionContentStore.Image(id: id, size: size, state: environment == .sandbox ? .approved : .pending)
            content.imageOrder.append(key)
            s.content[environment] = content
            return ok()
        }
    }

    private func deleteImage(_ id: String, _ environment: APIEnvironment) -> ServerAPIReply {
        guard let key = RetentionContentStore.key(id) else { return badRequest() }
        return retention.state.withLock { s -> ServerAPIReply in
            guard var content = s.content[environment] else { return ServerAPIReply(status: 500) }
            guard content.images[key] != nil else { return error(404, .imageNotFound, "Image not found.") }
            if content.messages.values.contains(where: { $0.imageKeys.contains(key) }) {
                return error(403, .imageInUse, "The image is in use by a message.")
            }
            content.images[key] = nil
            content.imageOrder.removeAll { $0 == key }
            s.content[environment] = content
            return ok()
        }
    }

    private func imageList(_ environment: APIEnvironment) -> ServerAPIReply {
        let items = retention.state.withLock { s -> [JSONValue] in
            guard let content = s.content[environment] else { return [] }
            return content.imageOrder.compactMap { content.images[$0] }.map { image in
                .object([
                    "imageIdentifier": .string(image.id), "imageState": .string(image.state.rawValue), "imageSize": .string(image.size.rawValue),
                ])
            }
        }
        return json(.object(["imageIdentifiers": .array(items)]))
    }

    // MARK: Messages

    /// A string field: `.some(nil)` when absent, nil when present but not a string.
    private func string(_ value: JSONValue?) -> String?? {
        switch value {
        case nil, .null?: return .some(nil)
        case .string(let text)?: return .some(text)
        default: return nil
        }
    }

    private func uploadMessage(_ id: String, _ body: [UInt8], _ environment: APIEnvironment) -> ServerAPIReply {
        guard let key = RetentionContentStore.key(id) else { return badRequest() }
        guard let fields = (try? JSONValue.parse(body, maximumDepth: 8))?.object,
            case let header?? = string(fields["header"]), case let text?? = string(fields["body"])
        else { return badRequest() }
        guard header.count <= RetentionLimits.headerLength else { return error(400, .headerTooLong, "Invalid request. The header is too long.") }
        guard text.count <= RetentionLimits.bodyLength else { return error(400, .bodyTooLong, "Invalid request. The body is too long.") }
        var imageKeys: [(key: String, size: RetentionImageSize)] = []
        var hasImage = false
        if let image = fields["image"], image != .null {
            guard let object = image.object, case let imageID?? = string(object["imageIdentifier"]), let imageKey = RetentionContentStore.key(imageID),
                case let alt?? = string(object["altText"])
            else { return badRequest() }
            guard alt.count <= RetentionLimits.altTextLength else { return error(400, .altTextTooLong, "Invalid request. The alt text is too long.") }
            imageKeys.append((imageKey, .fullSize))
            hasImage = true
        }
        guard case let position? = string(fields["headerPosition"]) else { return badRequest() }
        switch position.map(RetentionHeaderPosition.init(rawValue:)) {
        case nil, .aboveBody??: break
        case .aboveImage??:
            guard hasImage else { return error(400, .aboveImageRequiresImage, "Invalid request. ABOVE_IMAGE requires an image.") }
        case .some(nil): return badRequest()
        }
        if let bullets = fields["bulletPoints"], bullets != .null {
            guard let items = bullets.array else { return badRequest() }
            guard items.count <= RetentionLimits.bulletPoints else {
                return error(400, .tooManyBulletPoints, "Invalid request. The number of bullet points is too many.")
            }
            for item in items {
                guard let object = item.object, case let text?? = string(object["text"]), case let imageID?? = string(object["imageIdentifier"]),
                    let imageKey = RetentionContentStore.key(imageID), case let alt?? = string(object["altText"])
                else { return badRequest() }
                guard text.count <= RetentionLimits.bulletTextLength else {
                    return error(400, .bulletPointTextTooLong, "Invalid request. The bullet point text is too long.")
                }
                guard alt.count <= RetentionLimits.altTextLength else { return error(400, .altTextTooLong, "Invalid request. The alt text is too long.") }
                imageKeys.append((imageKey, .bulletPoint))
            }
        }
        return retention.state.withLock { s -> ServerAPIReply in
            guard var content = s.content[environment] else { return ServerAPIReply(status: 500) }
            // An image of the other size (a full-size image as a bullet's) is refused; an
            // image not uploaded yet is taken (Apple names no code for it; the message cannot
            // be approved for display until its images are).
            for (imageKey, size) in imageKeys where content.images[imageKey].map({ $0.size != size }) ?? false {
                return error(400, .invalidImageSize, "Invalid request. The image's size is invalid.")
            }
            if content.messages[key] != nil { return error(409, .messageAlreadyExists, "Invalid request. The message already exists.") }
            guard content.messages.count < RetentionLimits.maximumMessages else {
                return error(403, .maximumMessagesReached, "Maximum number of messages reached.")
            }
            content.messages[key] = RetentionContentStore.Message(
                id: id, state: environment == .sandbox ? .approved : .pending, imageKeys: imageKeys.map(\.key))
            content.messageOrder.append(key)
            s.content[environment] = content
            return ok()
        }
    }

    private func deleteMessage(_ id: String, _ environment: APIEnvironment) -> ServerAPIReply {
        guard let key = RetentionContentStore.key(id) else { return badRequest() }
        return retention.state.withLock { s -> ServerAPIReply in
            guard s.content[environment]?.messages[key] != nil else { return error(404, .messageNotFound, "Message not found.") }
            s.content[environment]?.messages[key] = nil
            s.content[environment]?.messageOrder.removeAll { $0 == key }
            return ok()
        }
    }

    private func messageList(_ environment: APIEnvironment) -> ServerAPIReply {
        let items = retention.state.withLock { s -> [JSONValue] in
            guard let content = s.content[environment] else { return [] }
            return content.messageOrder.compactMap { content.messages[$0] }.map { message in
                .object(["messageIdentifier": .string(message.id), "messageState": .string(message.state.rawValue)])
            }
        }
        return json(.object(["messageIdentifiers": .array(items)]))
    }

    // MARK: Default messages

    /// Apple's refusal of a product id or locale, nil when both are usable. A product id must
    /// be one of the data's auto-renewable products when the data has any; a locale has the
    /// shape of an App Store locale code (`en`, `en-US`, `zh-Hans`).
    private func defaultRefusal(product: String, locale: String, _ environment: APIEnvironment) -> ServerAPIReply? {
        let products = store.environments[environment].map { Set($0.rows.filter { $0.type == TransactionRow.autoRenewable }.map(\.productID)) } ?? []
        if product.isEmpty || product.utf8.count > 128 || (!products.isEmpty && !products.contains(product)) {
            return error(400, .invalidProductID, "Invalid product id.")
        }
        let parts = locale.split(separator: "-", omittingEmptySubsequences: false)
        let language = parts.first.map { (2...3).contains($0.count) && $0.allSatisfy { $0.isASCII && $0.isLowercase } } ?? false
        let regions = parts.dropFirst().allSatisfy { (2...4).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
        guard language, regions, parts.count <= 3 else { return error(400, .invalidLocale, "Invalid locale.") }
        return nil
    }

    private func configureDefault(product: String, locale: String, _ body: [UInt8], _ environment: APIEnvironment) -> ServerAPIReply {
        if let refusal = defaultRefusal(product: product, locale: locale, environment) { return refusal }
        guard let fields = (try? JSONValue.parse(body, maximumDepth: 4))?.object, case let id?? = string(fields["messageIdentifier"]) else {
            return badRequest()
        }
        guard let key = RetentionContentStore.key(id) else { return error(404, .messageNotFound, "Message not found.") }
        return retention.state.withLock { s -> ServerAPIReply in
            guard let content = s.content[environment] else { return ServerAPIReply(status: 500) }
            guard let message = content.messages[key] else { return error(404, .messageNotFound, "Message not found.") }
            guard message.state == .approved else { return error(403, .messageNotApproved, "Message not approved.") }
            guard message.imageKeys.allSatisfy({ content.images[$0]?.state == .approved }) else {
                return error(403, .imageNotApproved, "Image not approved.")
            }
            // Idempotent: the same or another message replaces what was set.
            s.content[environment]?.defaults[product + "\n" + locale] = key
            return ok()
        }
    }

    private func deleteDefault(product: String, locale: String, _ environment: APIEnvironment) -> ServerAPIReply {
        if let refusal = defaultRefusal(product: product, locale: locale, environment) { return refusal }
        // Idempotent: 200 whether or not one was set.
        retention.state.withLock { _ = $0.content[environment]?.defaults.removeValue(forKey: product + "\n" + locale) }
        return ok()
    }

    private func defaultMessage(product: String, locale: String, _ environment: APIEnvironment) -> ServerAPIReply {
        if let refusal = defaultRefusal(product: product, locale: locale, environment) { return refusal }
        let id = retention.state.withLock { s -> String? in
            guard let content = s.content[environment], let key = content.defaults[product + "\n" + locale] else { return nil }
            // A deleted message is still named (Apple's behaviour here is unconfirmed).
            return content.messages[key]?.id ?? key
        }
        guard let id else { return error(404, .defaultMessageNotFound, "Default message not found.") }
        return json(.object(["messageIdentifier": .string(id)]))
    }

    // MARK: Realtime URL

    private func configureRealtimeURL(_ body: [UInt8], _ environment: APIEnvironment) -> ServerAPIReply {
        guard let fields = (try? JSONValue.parse(body, maximumDepth: 4))?.object, case let url?? = string(fields["realtimeURL"]) else {
            return error(400, .invalidRealtimeURL, "Invalid request. The url is invalid.")
        }
        do throws(RetentionLimitError) {
            _ = try RetentionLimits.checked(RealtimeUrlRequest(realtimeURL: url))
        } catch {
            return self.error(400, .invalidRealtimeURL, "Invalid request. The url is invalid.")
        }
        return retention.state.withLock { s -> ServerAPIReply in
            if environment == .production, !s.performanceTestPassed {
                return error(403, .noPassingPerformanceTest, "Forbidden. No passing performance test.")
            }
            s.content[environment]?.realtimeURL = url
            return ok()
        }
    }

    private func deleteRealtimeURL(_ environment: APIEnvironment) -> ServerAPIReply {
        retention.state.withLock { $0.content[environment]?.realtimeURL = nil }
        return ok()
    }

    private func realtimeURL(_ environment: APIEnvironment) -> ServerAPIReply {
        guard let url = retention.realtimeURL(in: environment) else { return error(404, .realtimeURLNotFound, "Realtime URL not found.") }
        return json(.object(["realtimeURL": .string(url)]))
    }
}
