import APITestSupport
import AppStoreAPI
import AppStoreClients
import AsyncHTTPClient
import Foundation
import NIOCore
import ReceiptCore
import ReceiptSimulator
import Testing
import TestSupport

/// Retention Messaging's 12 content endpoints, sent by the client to the API simulator, which
/// answers as Apple does: each success and each error code, states, quotas, idempotency.
@Suite struct RetentionContentAPITests {
    static let product = "com.example.receiptdash.pro.monthly"
    let image = "7E3FB20B-4CDB-47CC-936D-99D65F608138"
    let bulletImage = "1C0FFEE0-0000-4000-8000-000000000001"
    let message = "0B7C1D2E-3F40-4152-8637-48596A7B8C9D"

    func send(_ client: AppStoreServerAPIClient, _ request: APIRequest, _ environment: APIEnvironment = .sandbox) async -> APIAnswer<APINoContent> {
        await client.send(request, in: environment, as: APINoContent.self)
    }

    /// Apple's status and code of a refusal; (200, nil) for a success.
    func answer(_ client: AppStoreServerAPIClient, _ request: APIRequest, _ environment: APIEnvironment = .sandbox) async -> (Int?, Int?) {
        let answer = await send(client, request, environment)
        return (answer.records.last?.httpStatus, answer.failure?.apiError?.rawValue)
    }

    @Test func imagesUploadListAndDeleteWithApplesCodes() async throws {
        try await withAPISimulator { client, simulator in
            let upload = try APIRequest.uploadImage(image, png: TestPNG.fullSize())
            #expect(await answer(client, upload) == (200, nil))
            #expect(await answer(client, upload) == (409, 4_090_000))
            // The same id in lower case is the same image (Apple's libraries differ in case).
            #expect(await answer(client, try .uploadImage(image.lowercased(), png: TestPNG.fullSize())) == (409, 4_090_000))
            #expect(await answer(client, try .uploadImage(bulletImage, size: .bulletPoint, png: TestPNG.bullet())) == (200, nil))
            // Apple's checks of the bytes: size for the size asked, transparency, not a PNG.
            let other = UUID().uuidString
            #expect(await answer(client, try .uploadImage(other, size: .bulletPoint, png: TestPNG.fullSize())) == (400, 4_000_216))
            #expect(await answer(client, try .uploadImage(other, png: TestPNG.make(width: 3840, height: 400, colourType: 6))) == (400, 4_000_161))
            #expect(await answer(client, try .uploadImage(other, png: Array("not a png".utf8))) == (400, 4_000_161))
            #expect(await answer(client, try .uploadImage("not-a-uuid", png: TestPNG.fullSize())) == (400, 4_000_000))

            let list = try #require(await client.imageList(environment: .sandbox).value)
            #expect(list.imageIdentifiers?.map(\.imageIdentifier) == [image, bulletImage])
            #expect(list.imageIdentifiers?.map(\.state) == [.approved, .approved])
            #expect(list.imageIdentifiers?.map(\.size) == [.fullSize, .bulletPoint])
            // Production keeps its own content, and it stays PENDING until reviewed.
            #expect(await client.imageList(environment: .production).value?.imageIdentifiers == [])

            #expect(await answer(client, try .deleteImage(bulletImage)) == (200, nil))
            #expect(await answer(client, try .deleteImage(bulletImage)) == (404, 4_040_014))
            #expect(await client.imageList(environment: .sandbox).value?.imageIdentifiers?.count == 1)
            #expect(simulator.service.writes.last?.path == "/inApps/v1/messaging/image/\(bulletImage)")
            // The log says the image's size, not its bytes.
            #expect(simulator.service.writes.first.map { $0.body.contains(String(TestPNG.fullSize().count)) && !$0.body.contains("PNG") } == true)
        }
    }

    @Test func anImageSizeApplesDoesNotKnowIsRefused() async throws {
        try await withAPISimulator { client, simulator in
            let path = "/api/sandbox/inApps/v1/messaging/image/\(image)?imageSize=HUGE"
            let reply = simulator.service.answer(
                ServerAPIRequest(method: "PUT", uri: path, authorization: bearer(client), body: TestPNG.fullSize()))
            #expect(reply.status == 400)
            #expect(reply.json?["errorCode"]?.int64 == 4_000_216)
            // Without a token: 401 before anything else, as Apple.
            #expect(simulator.service.answer(ServerAPIRequest(method: "PUT", uri: path, authorization: nil)).status == 401)
        }
    }

    @Test func messagesUploadWithApplesValidationAndCodes() async throws {
        try await withAPISimulator { client, _ in
            _ = await send(client, try .uploadImage(image, png: TestPNG.fullSize()))
            _ = await send(client, try .uploadImage(bulletImage, size: .bulletPoint, png: TestPNG.bullet()))
            func upload(_ body: UploadMessageRequestBody, id: String = UUID().uuidString) async throws -> (Int?, Int?) {
                await answer(client, try .uploadMessage(id, body))
            }
            let long = { (n: Int) in String(repeating: "x", count: n) }
            #expect(try await upload(UploadMessageRequestBody(header: long(67), body: "b")) == (400, 4_000_162))
            #expect(try await upload(UploadMessageRequestBody(header: "h", body: long(145))) == (400, 4_000_163))
            #expect(
                try await upload(UploadMessageRequestBody(header: "h", body: "b", image: UploadMessageImage(imageIdentifier: image, altText: long(151))))
                    == (400, 4_000_175))
            #expect(try await upload(UploadMessageRequestBody(header: "h", body: "b", headerPosition: .aboveImage)) == (400, 4_000_224))
            let bullet = RetentionBulletPoint(text: "t", imageIdentifier: bulletImage, altText: "a")
            #expect(try await upload(UploadMessageRequestBody(header: "h", body: "b", bulletPoints: Array(repeating: bullet, count: 6))) == (400, 4_000_218))
            var longBullet = bullet
            longBullet.text = long(67)
            #expect(try await upload(UploadMessageRequestBody(header: "h", body: "b", bulletPoints: [longBullet])) == (400, 4_000_219))
            // A full-size image as a bullet's image.
            var wrongSize = bullet
            wrongSize.imageIdentifier = image
            #expect(try await upload(UploadMessageRequestBody(header: "h", body: "b", bulletPoints: [wrongSize])) == (400, 4_000_216))
            #expect(await answer(client, try .uploadMessage(message, UploadMessageRequestBody(header: "h", body: "b"))) == (200, nil))
            let full = UploadMessageRequestBody(
                header: long(66), body: long(144), image: UploadMessageImage(imageIdentifier: image, altText: long(150)), headerPosition: .aboveImage,
                bulletPoints: Array(repeating: bullet, count: 5))
            #expect(try await upload(full, id: message) == (409, 4_090_001))
            #expect(try await upload(full) == (200, nil))
            let list = try #require(await client.messageList(environment: .sandbox).value)
            #expect(list.messageIdentifiers?.count == 2)
            #expect(list.messageIdentifiers?.first?.messageIdentifier == message)
            #expect(list.messageIdentifiers?.allSatisfy { $0.state == .approved } == true)
            #expect(await answer(client, try .deleteMessage(message)) == (200, nil))
            #expect(await answer(client, try .deleteMessage(message)) == (404, 4_040_015))
        }
    }

    @Test func anImageInUseCannotBeDeletedUntilItsMessageIs() async throws {
        try await withAPISimulator { client, _ in
            _ = await send(client, try .uploadImage(bulletImage, size: .bulletPoint, png: TestPNG.bullet()))
            let body = UploadMessageRequestBody(
                header: "h", body: "b", bulletPoints: [RetentionBulletPoint(text: "t", imageIdentifier: bulletImage.lowercased(), altText: "a")])
            #expect(await answer(client, try .uploadMessage(message, body)) == (200, nil))
            #expect(await answer(client, try .deleteImage(bulletImage)) == (403, 4_030_019))
            #expect(await answer(client, try .deleteMessage(message)) == (200, nil))
            #expect(await answer(client, try .deleteImage(bulletImage)) == (200, nil))
        }
    }

    @Test func productionContentWaitsForReviewBeforeItCanBeADefault() async throws {
        try await withAPISimulator { client, simulator in
            let service = simulator.service
            _ = await send(client, try .uploadImage(image, png: TestPNG.fullSize()), .production)
            let body = UploadMessageRequestBody(header: "h", body: "b", image: UploadMessageImage(imageIdentifier: image, altText: "a"))
            #expect(await answer(client, try .uploadMessage(message, body), .production) == (200, nil))
            #expect(await client.messageList(environment: .production).value?.messageIdentifiers?.first?.state == .pending)
            let configure = try APIRequest.configureDefaultMessage(
                productID: Self.product, locale: "en-US", DefaultConfigurationRequest(messageIdentifier: message))
            #expect(await answer(client, configure, .production) == (403, 4_030_017))
            // Apple's review, as the simulator's control port takes it.
            let approved = service.answer(ServerAPIRequest(method: "POST", uri: "/control?approve=\(message.lowercased())", authorization: nil))
            #expect(approved.status == 200)
            #expect(await answer(client, configure, .production) == (403, 4_030_018))
            #expect(service.answer(ServerAPIRequest(method: "POST", uri: "/control?approve=\(image)", authorization: nil)).status == 200)
            #expect(await answer(client, configure, .production) == (200, nil))
            #expect(service.retention.isDisplayable(message, in: .production))
            #expect(service.answer(ServerAPIRequest(method: "POST", uri: "/control?approve=\(UUID().uuidString)", authorization: nil)).status == 404)
            #expect(service.answer(ServerAPIRequest(method: "POST", uri: "/control", authorization: nil)).status == 400)
            #expect(service.answer(ServerAPIRequest(method: "GET", uri: "/control?approve=\(image)", authorization: nil)).status == 405)
        }
    }

    @Test func defaultsAreIdempotentAndCheckProductLocaleAndMessage() async throws {
        try await withAPISimulator { client, _ in
            _ = await send(client, try .uploadMessage(message, UploadMessageRequestBody(header: "h", body: "b")))
            let set = try APIRequest.configureDefaultMessage(productID: Self.product, locale: "en-US", DefaultConfigurationRequest(messageIdentifier: message))
            #expect(await answer(client, set) == (200, nil))
            #expect(await answer(client, set) == (200, nil))
            let got = try #require(await client.defaultMessage(productID: Self.product, locale: "en-US", environment: .sandbox).value)
            #expect(got.messageIdentifier == message)
            #expect(
                await answer(
                    client, try .configureDefaultMessage(productID: "com.example.unknown", locale: "en-US", DefaultConfigurationRequest(messageIdentifier: message)))
                    == (400, 4_000_023))
            #expect(
                await answer(client, try .configureDefaultMessage(productID: Self.product, locale: "EN_us", DefaultConfigurationRequest(messageIdentifier: message)))
                    == (400, 4_000_164))
            #expect(
                await answer(
                    client, try .configureDefaultMessage(productID: Self.product, locale: "fr-FR", DefaultConfigurationRequest(messageIdentifier: UUID().uuidString)))
                    == (404, 4_040_015))
            #expect(await answer(client, try .deleteDefaultMessage(productID: Self.product, locale: "en-US")) == (200, nil))
            #expect(await answer(client, try .deleteDefaultMessage(productID: Self.product, locale: "en-US")) == (200, nil))
            #expect(await answer(client, try .deleteDefaultMessage(productID: Self.product, locale: "e")) == (400, 4_000_164))
            let gone = await client.defaultMessage(productID: Self.product, locale: "en-US", environment: .sandbox)
            #expect(gone.failure?.apiError?.rawValue == 4_040_020)
            #expect(gone.records.last?.httpStatus == 404)
            let badProduct = await client.defaultMessage(productID: "com.example.unknown", locale: "en-US", environment: .sandbox)
            #expect(badProduct.failure?.apiError?.rawValue == 4_000_023)
        }
    }

    @Test func realtimeURLPerEnvironmentAndProductionOnlyAfterAPassedTest() async throws {
        try await withAPISimulator { client, simulator in
            let missing = await client.realtimeURL(environment: .sandbox)
            #expect(missing.failure?.apiError?.rawValue == 4_040_021)
            let set = APIRequest.configureRealtimeURL(RealtimeUrlRequest(realtimeURL: "https://example.com/retention"))
            #expect(await answer(client, set) == (200, nil))
            #expect(await client.realtimeURL(environment: .sandbox).value?.realtimeURL == "https://example.com/retention")
            // Set again: replaced, no delete needed.
            #expect(await answer(client, .configureRealtimeURL(RealtimeUrlRequest(realtimeURL: "https://example.com/r2"))) == (200, nil))
            #expect(await client.realtimeURL(environment: .sandbox).value?.realtimeURL == "https://example.com/r2")
            #expect(await answer(client, .configureRealtimeURL(RealtimeUrlRequest(realtimeURL: "http://example.com/r"))) == (400, 4_000_215))
            #expect(await answer(client, set, .production) == (403, 4_030_026))
            simulator.service.retention.markPerformanceTestPassed()
            #expect(await answer(client, set, .production) == (200, nil))
            #expect(simulator.service.retention.realtimeURL(in: .production) == "https://example.com/retention")
            #expect(await answer(client, .deleteRealtimeURL()) == (200, nil))
            #expect(await answer(client, .deleteRealtimeURL()) == (200, nil))
            #expect(await client.realtimeURL(environment: .sandbox).failure?.apiError?.rawValue == 4_040_021)
            #expect(await client.realtimeURL(environment: .production).value?.realtimeURL == "https://example.com/retention")
        }
    }

    @Test func quotasOf2000ImagesAndMessages() async throws {
        try await withAPISimulator { client, simulator in
            let service = simulator.service
            let png = TestPNG.bullet()
            for _ in 0..<2000 {
                let reply = service.answer(
                    ServerAPIRequest(
                        method: "PUT", uri: "/api/sandbox/inApps/v1/messaging/image/\(UUID().uuidString)?imageSize=BULLET_POINT",
                        authorization: bearer(client), body: png))
                #expect(reply.status == 200)
                let body = Array(#"{"header":"h","body":"b"}"#.utf8)
                let message = service.answer(
                    ServerAPIRequest(method: "PUT", uri: "/api/sandbox/inApps/v1/messaging/message/\(UUID().uuidString)", authorization: bearer(client), body: body))
                #expect(message.status == 200)
            }
            let oneMoreImage = try APIRequest.uploadImage(UUID().uuidString, size: .bulletPoint, png: png)
            let oneMoreMessage = try APIRequest.uploadMessage(UUID().uuidString, UploadMessageRequestBody(header: "h", body: "b"))
            #expect(await answer(client, oneMoreImage) == (403, 4_030_014))
            #expect(await answer(client, oneMoreMessage) == (403, 4_030_016))
        }
    }

    @Test func rateLimitsAsAppleStatesThemWhenAsked() async throws {
        try await withAPISimulator { client, simulator in
            let service = simulator.service
            // Off by default: 400 list reads in sandbox pass.
            for _ in 0..<361 { #expect(service.answer(ServerAPIRequest(method: "GET", uri: "/api/sandbox/inApps/v1/messaging/image/list", authorization: bearer(client))).status == 200) }
            service.retention.enforceRateLimits(true)
            // Sandbox: 10 % of production's 1 per second over an hour, 360.
            for _ in 0..<360 { #expect(service.answer(ServerAPIRequest(method: "GET", uri: "/api/sandbox/inApps/v1/messaging/message/list", authorization: bearer(client))).status == 200) }
            let limited = service.answer(ServerAPIRequest(method: "GET", uri: "/api/sandbox/inApps/v1/messaging/message/list", authorization: bearer(client)))
            #expect(limited.status == 429)
            #expect(limited.json?["errorCode"]?.int64 == 4_290_000)
            #expect(limited.headers.first { $0.0 == "Retry-After" } != nil)
            // Another endpoint has its own budget.
            #expect(service.answer(ServerAPIRequest(method: "GET", uri: "/api/sandbox/inApps/v1/messaging/image/list", authorization: bearer(client))).status == 200)
        }
    }

    /// The `simulator` command's one port (verifyReceipt beside the API) takes the review
    /// control and image uploads larger than other API bodies (64 KiB).
    @Test func theSharedPortTakesReviewsAndLargeImages() async throws {
        let (credentials, key) = makeTestCredentials(bundleID: ServerAPIData.demoBundleID)
        let service = try ServerAPIService(ServerAPIConfiguration(publicKey: key.publicKey))
        let both = try await VerifyReceiptSimulator.start(SimulatorConfiguration(), api: service)
        let client = AppStoreServerAPIClient(
            credentials: credentials, hosts: try APIHosts(production: both.apiProductionURL, sandbox: both.apiSandboxURL), retry: wallClockRetry,
            requestTimeout: .seconds(60))
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            // 100 KiB: a tEXt chunk before the image data.
            let big = Array(TestPNG.fullSize().prefix(33)) + TestPNG.chunk("tEXt", Array(repeating: 0x41, count: 100 * 1024)) + Array(TestPNG.fullSize().dropFirst(33))
            let upload = await client.send(try .uploadImage(image, png: big), in: .production, as: APINoContent.self)
            #expect(upload.records.last?.httpStatus == 200)
            var control = HTTPClientRequest(url: "http://127.0.0.1:\(both.port)/control?approve=\(image)")
            control.method = .POST
            let response = try await http.execute(control, timeout: .seconds(600))
            #expect(response.status.code == 200)
            #expect(service.retention.imageState(image, in: .production) == .approved)
        } catch {
            Issue.record("\(error)")
        }
        try await client.shutdown()
        try await http.shutdown()
        try await both.stop()
    }

    /// A bearer token the simulator takes.
    func bearer(_ client: AppStoreServerAPIClient) -> String {
        "Bearer " + ((try? APIToken.mint(client.credentials, now: client.clock.now())) ?? "")
    }
}
