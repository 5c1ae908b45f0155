import Foundation

extension APIErrorCode {
    // Retention Messaging's codes (fact sheet retention-messaging.md §1.2). 4000006, 4000023,
    // 4000048, 4000185 and 4000187 are shared with the other endpoints and defined there.
    /// 4000161 InvalidImageError: the image is not a PNG Apple accepts.
    public static let invalidImage = APIErrorCode(4_000_161)
    /// 4000162 HeaderTooLongError: the header is longer than 66 characters.
    public static let headerTooLong = APIErrorCode(4_000_162)
    /// 4000163 BodyTooLongError: the body is longer than 144 characters.
    public static let bodyTooLong = APIErrorCode(4_000_163)
    /// 4000164 InvalidLocaleError.
    public static let invalidLocale = APIErrorCode(4_000_164)
    /// 4000175 AltTextTooLongError: alternative text longer than 150 characters.
    public static let altTextTooLong = APIErrorCode(4_000_175)
    /// 4000211 InvalidPerformanceTestRequestError.
    public static let invalidPerformanceTestRequest = APIErrorCode(4_000_211)
    /// 4000212 InvalidRequestIdError (a performance test's request id).
    public static let invalidPerformanceTestRequestID = APIErrorCode(4_000_212)
    /// 4000213 ExistingPerformanceTestRunError: a test is already running.
    public static let existingPerformanceTestRun = APIErrorCode(4_000_213)
    /// 4000215 BadRequestRealtimeUrlError: not `https://` or longer than 256 characters.
    public static let invalidRealtimeURL = APIErrorCode(4_000_215)
    /// 4000216 BadRequestImageSizeError: the image's size is not the one asked for.
    public static let invalidImageSize = APIErrorCode(4_000_216)
    /// 4000218 BadRequestTooManyBulletPointsError: more than 5 bullet points.
    public static let tooManyBulletPoints = APIErrorCode(4_000_218)
    /// 4000219 BadRequestBulletPointTextTooLongError: bullet text longer than 66 characters.
    public static let bulletPointTextTooLong = APIErrorCode(4_000_219)
    /// 4000224 BadRequestAboveImageRequiresAnImageError.
    public static let aboveImageRequiresImage = APIErrorCode(4_000_224)
    /// 4030014 MaximumNumberOfImagesReachedError (2000 images).
    public static let maximumImagesReached = APIErrorCode(4_030_014)
    /// 4030016 MaximumNumberOfMessagesReachedError (2000 messages).
    public static let maximumMessagesReached = APIErrorCode(4_030_016)
    /// 4030017 MessageNotApprovedError.
    public static let messageNotApproved = APIErrorCode(4_030_017)
    /// 4030018 ImageNotApprovedError.
    public static let imageNotApproved = APIErrorCode(4_030_018)
    /// 4030019 ImageInUseError: a message still uses the image.
    public static let imageInUse = APIErrorCode(4_030_019)
    /// 4030026 ForbiddenNoPassingTestError: a production realtime URL before a passed sandbox test.
    public static let noPassingPerformanceTest = APIErrorCode(4_030_026)
    /// 4040014 ImageNotFoundError.
    public static let imageNotFound = APIErrorCode(4_040_014)
    /// 4040015 MessageNotFoundError.
    public static let messageNotFound = APIErrorCode(4_040_015)
    /// 4040018 PerformanceTestRunNotFoundError.
    public static let performanceTestRunNotFound = APIErrorCode(4_040_018)
    /// 4040020 DefaultMessageNotFoundError.
    public static let defaultMessageNotFound = APIErrorCode(4_040_020)
    /// 4040021 RealtimeUrlNotFoundError: no realtime URL in this environment.
    public static let realtimeURLNotFound = APIErrorCode(4_040_021)
    /// 4090000 ImageAlreadyExistsError.
    public static let imageAlreadyExists = APIErrorCode(4_090_000)
    /// 4090001 MessageAlreadyExistsError.
    public static let messageAlreadyExists = APIErrorCode(4_090_001)

    /// Retention Messaging's own codes, each with what it means and what to do next.
    public static let retentionCodes: [APIErrorCode] = [
        .invalidImage, .headerTooLong, .bodyTooLong, .invalidLocale, .altTextTooLong, .invalidPerformanceTestRequest,
        .invalidPerformanceTestRequestID, .existingPerformanceTestRun, .invalidRealtimeURL, .invalidImageSize, .tooManyBulletPoints,
        .bulletPointTextTooLong, .aboveImageRequiresImage, .maximumImagesReached, .maximumMessagesReached, .messageNotApproved,
        .imageNotApproved, .imageInUse, .noPassingPerformanceTest, .imageNotFound, .messageNotFound, .performanceTestRunNotFound,
        .defaultMessageNotFound, .realtimeURLNotFound, .imageAlreadyExists, .messageAlreadyExists,
    ]

    /// A Retention Messaging refusal in words: what it means and what to do. Codes it does not
    /// add keep ``actionExplanation``.
    public var retentionExplanation: String {
        switch self {
        case .invalidImage: "the image is invalid: give a PNG without transparency, 3840 px wide (full) or 1024 × 1024 (bullet)"
        case .headerTooLong: "the header is too long: keep it to 66 characters"
        case .bodyTooLong: "the body is too long: keep it to 144 characters"
        case .invalidLocale: "the locale is invalid: give an App Store locale code such as en-US"
        case .altTextTooLong: "the alternative text is too long: keep it to 150 characters"
        case .invalidPerformanceTestRequest: "the performance test request is invalid: give the original transaction id of an active sandbox subscription"
        case .invalidPerformanceTestRequestID: "the performance test's request id is invalid: use the one `performance-test start` printed"
        case .existingPerformanceTestRun: "a performance test is already running: wait for its result, then start another"
        case .invalidRealtimeURL: "the realtime URL is invalid: it must start with https:// and be at most 256 characters"
        case .invalidImageSize: "the image's size is invalid: full size is 3840 px wide and 160 to 2160 px tall; a bullet image is 1024 × 1024"
        case .tooManyBulletPoints: "too many bullet points: give at most 5"
        case .bulletPointTextTooLong: "a bullet point's text is too long: keep it to 66 characters"
        case .aboveImageRequiresImage: "the header can be above the image only when the message has one: add --image, or leave --header-position out"
        case .maximumImagesReached: "Apple holds 2000 images already: delete unused ones (`messaging image delete`) first"
        case .maximumMessagesReached: "Apple holds 2000 messages already: delete unused ones (`messaging message delete`) first"
        case .messageNotApproved: "the message is not approved yet: wait for Apple's review (`messaging message list` shows its state)"
        case .imageNotApproved: "the message's image is not approved yet: wait for Apple's review (`messaging image list` shows its state)"
        case .imageInUse: "a message still uses this image: delete that message first"
        case .noPassingPerformanceTest: "production takes a realtime URL only after a sandbox performance test passed: run `messaging performance-test start` in sandbox first"
        case .imageNotFound: "no image with this identifier: `messaging image list` shows what Apple holds"
        case .messageNotFound: "no message with this identifier: `messaging message list` shows what Apple holds"
        case .performanceTestRunNotFound: "no performance test with this request id: check it and the environment (sandbox)"
        case .defaultMessageNotFound: "no default message for this product and locale: set one with `messaging default set`"
        case .realtimeURLNotFound: "no realtime URL is set in this environment: set one with `messaging realtime-url set`"
        case .imageAlreadyExists: "an image with this identifier exists already: uploads are not replaced; pick a new UUID or delete the old image"
        case .messageAlreadyExists: "a message with this identifier exists already: uploads are not replaced; pick a new UUID or delete the old message"
        default: actionExplanation
        }
    }
}
