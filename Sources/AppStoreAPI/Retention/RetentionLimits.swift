import Foundation
import ReceiptCore

/// A Retention Messaging value Apple would refuse, found before anything is sent: which rule
/// (``code``), Apple's `errorCode` for it (``apiErrorCode``) and the value that broke it.
public struct RetentionLimitError: CodedError {
    public enum Code: String, CodedErrorCode, CaseIterable {
        /// A header longer than 66 characters (4000162).
        case headerTooLong = "header-too-long"
        /// A body longer than 144 characters (4000163).
        case bodyTooLong = "body-too-long"
        /// Alternative text longer than 150 characters (4000175).
        case altTextTooLong = "alt-text-too-long"
        /// More than 5 bullet points (4000218).
        case tooManyBulletPoints = "too-many-bullet-points"
        /// A bullet point's text longer than 66 characters (4000219).
        case bulletTextTooLong = "bullet-text-too-long"
        /// `ABOVE_IMAGE` without an image (4000224).
        case aboveImageNeedsImage = "above-image-needs-image"
        /// A realtime URL that is not `https://` or is longer than 256 characters (4000215).
        case realtimeURLInvalid = "realtime-url-invalid"
        /// An image or message identifier that is not a UUID (Apple documents them as UUIDs;
        /// its code for another value is unconfirmed).
        case identifierNotUUID = "identifier-not-uuid"
        /// An empty product id (4000023).
        case productIDEmpty = "product-id-empty"
        /// An empty locale, or one with spaces or `/` (4000164).
        case localeInvalid = "locale-invalid"
        /// Not a PNG, or a damaged one (4000161).
        case imageInvalid = "image-invalid"
        /// A PNG with an alpha channel or a `tRNS` chunk (4000161).
        case imageTransparent = "image-transparent"
        /// A PNG whose width and height are not those of its `imageSize` (4000216).
        case imageSizeInvalid = "image-size-invalid"
    }

    public let code: Code
    /// The value that broke the rule, or what was wrong with it.
    public let value: String?

    public init(_ code: Code, value: String? = nil) {
        self.code = code
        self.value = value
    }

    /// Apple's `errorCode` for the same refusal; nil where Apple documents none.
    public var apiErrorCode: APIErrorCode? {
        switch code {
        case .headerTooLong: .headerTooLong
        case .identifierNotUUID: nil
        case .bodyTooLong: .bodyTooLong
        case .altTextTooLong: .altTextTooLong
        case .tooManyBulletPoints: .tooManyBulletPoints
        case .bulletTextTooLong: .bulletPointTextTooLong
        case .aboveImageNeedsImage: .aboveImageRequiresImage
        case .realtimeURLInvalid: .invalidRealtimeURL
        case .productIDEmpty: .invalidProductID
        case .localeInvalid: .invalidLocale
        case .imageInvalid, .imageTransparent: .invalidImage
        case .imageSizeInvalid: .invalidImageSize
        }
    }

    /// The rule in words, with Apple's code (`the header is 70 characters: Apple allows 66
    /// (4000162)`). The value is quoted by the caller's sanitiser where it is shown.
    public var reason: String {
        let given = value.map { " (\($0))" } ?? ""
        let rule: String =
            switch code {
            case .headerTooLong: "the header is longer than \(RetentionLimits.headerLength) characters\(given)"
            case .bodyTooLong: "the body is longer than \(RetentionLimits.bodyLength) characters\(given)"
            case .altTextTooLong: "alternative text is longer than \(RetentionLimits.altTextLength) characters\(given)"
            case .tooManyBulletPoints: "more than \(RetentionLimits.bulletPoints) bullet points\(given)"
            case .bulletTextTooLong: "a bullet point's text is longer than \(RetentionLimits.bulletTextLength) characters\(given)"
            case .aboveImageNeedsImage: "the header can be above the image only in a message with an image: add --image and --alt-text"
            case .realtimeURLInvalid: "the realtime URL must start with https:// and be at most \(RetentionLimits.realtimeURLLength) characters\(given)"
            case .identifierNotUUID: "identifiers are UUIDs such as 7E3FB20B-4CDB-47CC-936D-99D65F608138\(given)"
            case .productIDEmpty: "the product id is empty"
            case .localeInvalid: "the locale must be an App Store locale code such as en-US\(given)"
            case .imageInvalid: "the image is not a PNG Apple can read\(given)"
            case .imageTransparent: "the image has \(value ?? "transparency"): Apple refuses transparency, so save it without alpha"
            case .imageSizeInvalid:
                "the image's size does not fit\(given): full size is 3840 px wide and 160 to 2160 px tall; a bullet image is 1024 × 1024"
            }
        return apiErrorCode.map { "\(rule) (Apple's error \($0.rawValue))" } ?? rule
    }
}

/// Apple's Retention Messaging limits, checked before anything is sent (Apple's Swift library
/// checks the same ones before sending; the simulator enforces them too).
///
/// Lengths are counted as Apple's Swift library counts them: `String.count`, characters as
/// people see them (grapheme clusters). How Apple's server counts is unconfirmed.
/// Identifiers are sent in upper case, as Apple's Swift library sends them (`uuidString`);
/// whether Apple's server cares about case is unconfirmed.
public enum RetentionLimits {
    public static let headerLength = 66
    public static let bodyLength = 144
    public static let altTextLength = 150
    public static let bulletPoints = 5
    public static let bulletTextLength = 66
    public static let realtimeURLLength = 256
    /// Apple's quotas per app (403 4030014 / 4030016 beyond them).
    public static let maximumImages = 2000
    public static let maximumMessages = 2000

    /// `id` as Apple's library sends a UUID (upper case), or ``RetentionLimitError/Code/identifierNotUUID``.
    public static func identifier(_ id: String) throws(RetentionLimitError) -> String {
        guard let uuid = UUID(uuidString: id.trimmingCharacters(in: .whitespaces)) else {
            throw RetentionLimitError(.identifierNotUUID, value: "not \(id)")
        }
        return uuid.uuidString
    }

    /// The body checked, its identifiers in upper case.
    public static func checked(_ body: UploadMessageRequestBody) throws(RetentionLimitError) -> UploadMessageRequestBody {
        var body = body
        guard body.header.count <= headerLength else { throw RetentionLimitError(.headerTooLong, value: "\(body.header.count) characters") }
        guard body.body.count <= bodyLength else { throw RetentionLimitError(.bodyTooLong, value: "\(body.body.count) characters") }
        if let image = body.image {
            body.image?.imageIdentifier = try identifier(image.imageIdentifier)
            guard image.altText.count <= altTextLength else {
                throw RetentionLimitError(.altTextTooLong, value: "\(image.altText.count) characters")
            }
        }
        if body.headerPosition == .aboveImage, body.image == nil { throw RetentionLimitError(.aboveImageNeedsImage) }
        if let bullets = body.bulletPoints {
            guard bullets.count <= bulletPoints else { throw RetentionLimitError(.tooManyBulletPoints, value: "\(bullets.count)") }
            for index in bullets.indices {
                let bullet = bullets[index]
                guard bullet.text.count <= bulletTextLength else {
                    throw RetentionLimitError(.bulletTextTooLong, value: "bullet \(index + 1): \(bullet.text.count) characters")
                }
                guard bullet.altText.count <= altTextLength else {
                    throw RetentionLimitError(.altTextTooLong, value: "bullet \(index + 1): \(bullet.altText.count) characters")
                }
                body.bulletPoints?[index].imageIdentifier = try identifier(bullet.imageIdentifier)
            }
        }
        return body
    }

    /// The realtime URL checked: `https://` (any case of the scheme) and at most 256 characters.
    /// Plain `http://` only to a loopback address (a responder and the simulator on one
    /// machine); Apple itself takes only https.
    public static func checked(_ request: RealtimeUrlRequest) throws(RetentionLimitError) -> RealtimeUrlRequest {
        let url = request.realtimeURL
        let loopbackHTTP = url.lowercased().hasPrefix("http://") && Loopback.isLoopback(url: url)
        guard loopbackHTTP || (url.lowercased().hasPrefix("https://") && url.count > "https://".count) else {
            throw RetentionLimitError(.realtimeURLInvalid, value: "not https")
        }
        guard url.count <= realtimeURLLength else { throw RetentionLimitError(.realtimeURLInvalid, value: "\(url.count) characters") }
        return request
    }

    /// A product id and locale of the default-message endpoints, checked.
    public static func checkDefault(productID: String, locale: String) throws(RetentionLimitError) {
        guard !productID.trimmingCharacters(in: .whitespaces).isEmpty else { throw RetentionLimitError(.productIDEmpty) }
        guard !locale.isEmpty, locale.utf8.count <= 32, !locale.contains(where: { $0.isWhitespace || $0 == "/" }) else {
            throw RetentionLimitError(.localeInvalid, value: "not \(locale)")
        }
    }
}
