import AppStoreAPI
import Foundation
import Testing

/// The 14 Retention Messaging requests as Apple's library sends them, and its answers decoded
/// from the JSON Apple documents.
@Suite struct RetentionRequestTests {
    let id = "A1B2C3D4-E5F6-7890-A1B2-C3D4E5F67890"

    @Test func everyEndpointHasItsMethodPathAndKind() throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47]
        let cases: [(APIRequest, APIEndpointKind, APIRequest.Method, String)] = [
            (try .uploadImage(id, png: png), .uploadImage, .put, "/inApps/v1/messaging/image/\(id)?imageSize=FULL_SIZE"),
            (try .uploadImage(id, size: .bulletPoint, png: png), .uploadImage, .put, "/inApps/v1/messaging/image/\(id)?imageSize=BULLET_POINT"),
            (try .deleteImage(id), .deleteImage, .delete, "/inApps/v1/messaging/image/\(id)"),
            (.imageList(), .imageList, .get, "/inApps/v1/messaging/image/list"),
            (try .uploadMessage(id, UploadMessageRequestBody(header: "h", body: "b")), .uploadMessage, .put, "/inApps/v1/messaging/message/\(id)"),
            (try .deleteMessage(id), .deleteMessage, .delete, "/inApps/v1/messaging/message/\(id)"),
            (.messageList(), .messageList, .get, "/inApps/v1/messaging/message/list"),
            (
                try .configureDefaultMessage(productID: "com.example.monthly", locale: "en-US", DefaultConfigurationRequest(messageIdentifier: id)),
                .configureDefaultMessage, .put, "/inApps/v1/messaging/default/com%2Eexample%2Emonthly/en-US"
            ),
            (
                try .deleteDefaultMessage(productID: "com.example.monthly", locale: "en-US"), .deleteDefaultMessage, .delete,
                "/inApps/v1/messaging/default/com%2Eexample%2Emonthly/en-US"
            ),
            (
                try .defaultMessage(productID: "com.example.monthly", locale: "en-US"), .defaultMessage, .get,
                "/inApps/v1/messaging/default/com%2Eexample%2Emonthly/en-US"
            ),
            (.configureRealtimeURL(RealtimeUrlRequest(realtimeURL: "https://example.com/r")), .configureRealtimeURL, .put, "/inApps/v1/messaging/realtime/url"),
            (.deleteRealtimeURL(), .deleteRealtimeURL, .delete, "/inApps/v1/messaging/realtime/url"),
            (.realtimeURL(), .realtimeURL, .get, "/inApps/v1/messaging/realtime/url"),
            (.initiatePerformanceTest(PerformanceTestRequest(originalTransactionId: "2000000001")), .performanceTest, .post, "/inApps/v1/messaging/performanceTest"),
            (try .performanceTestResult(id), .performanceTestResult, .get, "/inApps/v1/messaging/performanceTest/result/\(id)"),
        ]
        #expect(Set(cases.map(\.1)).count == 14)
        for (request, kind, method, path) in cases {
            #expect(request.endpoint == kind)
            #expect(request.method == method, "\(kind)")
            #expect(request.pathAndQuery == path, "\(kind)")
            // GET and DELETE carry no body and so no content type.
            if method == .get || method == .delete {
                #expect(request.body == nil && request.contentType == nil, "\(kind)")
            }
        }
        #expect(APIRequest.Method.delete.rawValue == "DELETE")
        #expect(!APIEndpointKind.performanceTest.isAvailableInProduction)
        #expect(!APIEndpointKind.performanceTestResult.isAvailableInProduction)
        #expect(APIEndpointKind.uploadImage.isAvailableInProduction && APIEndpointKind.uploadImage.isAvailableInSandbox)
    }

    @Test func endpointKindNamesAreTheFixedOnes() {
        let retention: [APIEndpointKind] = [
            .uploadImage, .deleteImage, .imageList, .uploadMessage, .deleteMessage, .messageList, .configureDefaultMessage,
            .deleteDefaultMessage, .defaultMessage, .configureRealtimeURL, .deleteRealtimeURL, .realtimeURL, .performanceTest,
            .performanceTestResult,
        ]
        #expect(
            retention.map(\.rawValue) == [
                "upload-image", "delete-image", "image-list", "upload-message", "delete-message", "message-list", "configure-default-message",
                "delete-default-message", "default-message", "configure-realtime-url", "delete-realtime-url", "realtime-url", "performance-test",
                "performance-test-result",
            ])
    }

    @Test func imageUploadSendsThePNGBytesAsImagePNG() throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        let request = try APIRequest.uploadImage(id, png: png)
        #expect(request.body == png)
        #expect(request.contentType == "image/png")
        #expect(try APIRequest.uploadMessage(id, UploadMessageRequestBody(header: "h", body: "b")).contentType == "application/json")
    }

    @Test func idsCannotChangeThePathOrQuery() throws {
        #expect(try APIRequest.deleteImage("../x?y=1").path == "/inApps/v1/messaging/image/%2E%2E%2Fx%3Fy%3D1")
        #expect(try APIRequest.defaultMessage(productID: "a/b", locale: "en US").path == "/inApps/v1/messaging/default/a%2Fb/en%20US")
        #expect(throws: APIFailure(.invalidRequest, "")) { try APIRequest.deleteMessage("  ") }
    }

    @Test func messageBodyIsAppleJSONWithOptionalKeysLeftOut() throws {
        let bare = try APIRequest.uploadMessage(id, UploadMessageRequestBody(header: "Stay", body: "Half price"))
        #expect(bare.bodyText == #"{"body":"Half price","header":"Stay"}"#)
        let full = try APIRequest.uploadMessage(
            id,
            UploadMessageRequestBody(
                header: "Stay", body: "Half price", image: UploadMessageImage(imageIdentifier: id, altText: "A cat"), headerPosition: .aboveImage,
                bulletPoints: [RetentionBulletPoint(text: "More", imageIdentifier: id, altText: "Dot")]))
        #expect(
            full.bodyText
                == #"{"body":"Half price","bulletPoints":[{"altText":"Dot","imageIdentifier":"\#(id)","text":"More"}],"header":"Stay","headerPosition":"ABOVE_IMAGE","image":{"altText":"A cat","imageIdentifier":"\#(id)"}}"#
        )
        #expect(APIRequest.configureRealtimeURL(RealtimeUrlRequest(realtimeURL: "https://example.com/r")).bodyText == #"{"realtimeURL":"https://example.com/r"}"#)
        #expect(
            try APIRequest.configureDefaultMessage(productID: "p", locale: "en-US", DefaultConfigurationRequest(messageIdentifier: id)).bodyText
                == #"{"messageIdentifier":"\#(id)"}"#)
        #expect(APIRequest.initiatePerformanceTest(PerformanceTestRequest(originalTransactionId: "9")).bodyText == #"{"originalTransactionId":"9"}"#)
    }

    @Test func listsKeepStatesAsSentAndTypeTheKnownOnes() throws {
        let images = try JSONDecoder().decode(
            GetImageListResponse.self,
            from: Data(
                #"{"imageIdentifiers":[{"imageIdentifier":"a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890","imageState":"APPROVED"},{"imageIdentifier":"x","imageState":"ARCHIVED","imageSize":"BULLET_POINT"}]}"#
                    .utf8))
        let items = try #require(images.imageIdentifiers)
        #expect(items.map(\.state) == [.approved, nil])
        #expect(items.map(\.imageState) == ["APPROVED", "ARCHIVED"])
        #expect(items.map(\.size) == [nil, .bulletPoint])
        let messages = try JSONDecoder().decode(
            GetMessageListResponse.self, from: Data(#"{"messageIdentifiers":[{"messageIdentifier":"m","messageState":"PENDING"}]}"#.utf8))
        #expect(messages.messageIdentifiers?.first?.state == .pending)
    }

    @Test func performanceTestDocumentsDecode() throws {
        let started = try JSONDecoder().decode(
            PerformanceTestResponse.self,
            from: Data(
                #"{"config":{"maxConcurrentRequests":10,"totalRequests":100,"totalDuration":60000,"responseTimeThreshold":500,"successRateThreshold":95},"requestId":"a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"}"#
                    .utf8))
        #expect(
            started.config
                == PerformanceTestConfig(
                    maxConcurrentRequests: 10, totalRequests: 100, totalDuration: 60000, responseTimeThreshold: 500, successRateThreshold: 95))
        #expect(started.requestId == "a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890")
        let result = try JSONDecoder().decode(
            PerformanceTestResultResponse.self,
            from: Data(
                #"{"config":{"maxConcurrentRequests":10,"totalRequests":100,"totalDuration":60000,"responseTimeThreshold":500,"successRateThreshold":95},"target":"https://example.com/retention","result":"PASS","successRate":98,"numPending":0,"responseTimes":{"average":120,"p50":100,"p90":200,"p95":250,"p99":400},"failures":{"TIMED_OUT":1,"NO_RESPONSE":1}}"#
                    .utf8))
        #expect(result.status == .pass)
        #expect(result.successRate == 98)
        #expect(result.responseTimes == PerformanceTestResponseTimes(average: 120, p50: 100, p90: 200, p95: 250, p99: 400))
        #expect(result.failures == ["TIMED_OUT": 1, "NO_RESPONSE": 1])
        #expect(result.failures.map { Set($0.keys.compactMap(RealtimeSendAttemptResult.init(rawValue:))) } == [.timedOut, .noResponse])
    }

    @Test func retentionCodesAreKnownAndSayWhatToDo() {
        #expect(APIErrorCode.retentionCodes.count == 26)
        #expect(Set(APIErrorCode.retentionCodes).count == 26)
        for code in APIErrorCode.retentionCodes {
            #expect(code.isKnown, "\(code.rawValue)")
            #expect(code.explanation == code.retentionExplanation, "\(code.rawValue)")
            #expect(code.retentionExplanation.contains(": "), "\(code.rawValue)")
            #expect(!APIErrorCode.known.contains(code) && !APIErrorCode.actionCodes.contains(code), "\(code.rawValue)")
        }
        #expect(APIErrorCode.imageInUse.rawValue == 4_030_019)
        #expect(APIErrorCode.noPassingPerformanceTest.rawValue == 4_030_026)
    }
}
