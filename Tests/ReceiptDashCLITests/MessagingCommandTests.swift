import Foundation
import ReceiptCore
import ReceiptSimulator
import Testing
import TestSupport

/// `receiptdash messaging` as a process against the API simulator: limits refused before
/// anything is sent, the write gate (dry run, --yes, auto refused, read-only, recorded), reads
/// in text and JSON, and `status` with its gaps.
@Suite struct MessagingCommandTests {
    typealias Setup = ActionCommandsTests.Setup
    static let product = "com.example.receiptdash.pro.monthly"
    let image = "7E3FB20B-4CDB-47CC-936D-99D65F608138"
    let message = "0B7C1D2E-3F40-4152-8637-48596A7B8C9D"

    func pngFile(_ setup: Setup, _ bytes: [UInt8], name: String = "banner.png") throws -> String {
        let path = setup.folder.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func limitsAreRefusedBeforeAnythingIsSent() async throws {
        let setup = try await Setup()
        let sandbox = ["--environment", "sandbox", "--yes", "--db", setup.db]
        let cases: [([String], String)] = [
            (["messaging", "message", "upload", "--id", message, "--header", String(repeating: "h", count: 67), "--body", "b"], "header-too-long"),
            (["messaging", "message", "upload", "--id", message, "--header", "h", "--body", String(repeating: "b", count: 145)], "body-too-long"),
            (["messaging", "message", "upload", "--id", message, "--header", "h", "--body", "b", "--header-position", "above-image"], "above-image-needs-image"),
            (["messaging", "message", "upload", "--id", "nope", "--header", "h", "--body", "b"], "identifier-not-uuid"),
            (["messaging", "realtime-url", "set", "http://example.com/r"], "realtime-url-invalid"),
            (["messaging", "default", "set", "--product-id", Self.product, "--locale", "en US", "--message", message], "locale-invalid"),
            (["messaging", "image", "upload", try pngFile(setup, TestPNG.make(width: 3840, height: 400, colourType: 6)), "--id", image], "image-transparent"),
            (["messaging", "image", "upload", try pngFile(setup, TestPNG.make(width: 3840, height: 100), name: "short.png"), "--id", image], "image-size-invalid"),
        ]
        for (arguments, code) in cases {
            let run = try await setup.run(arguments + sandbox)
            #expect(run.status == 64, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains("[\(code)]"), "\(arguments): \(run.stderr)")
        }
        // Apple's code is named.
        let header = try await setup.run(["messaging", "message", "upload", "--id", message, "--header", String(repeating: "h", count: 67), "--body", "b"] + sandbox)
        #expect(header.stderr.contains("4000162"))
        #expect(setup.simulator.service.requestCount == 0)
        try await setup.stop()
    }

    @Test func theWriteGateHoldsForMessaging() async throws {
        let words = Wording("messaging-commands", matching: [(#"request id [0-9a-f-]{36}"#, "request id <uuid>")])
        let setup = try await Setup()
        let png = try pngFile(setup, TestPNG.fullSize())
        // auto is never guessed: nothing sent.
        let auto = try await setup.run(["messaging", "image", "upload", png, "--id", image, "--yes", "--db", setup.db, "--format", "json"])
        #expect(auto.status == 1)
        #expect(((auto.json as? [String: Any])?["error"] as? [String: Any])?["code"] as? String == "environment-unknown")
        // A dry run shows the plan and the request, and sends nothing.
        let dry = try await setup.run([
            "messaging", "image", "upload", png, "--id", image.lowercased(), "--environment", "sandbox", "--dry-run", "--request-id", "ticket-1",
        ])
        #expect(dry.status == 0, "\(dry.stderr)")
        words.said(dry.stdout)
        // Without --yes and without a terminal: exit 64, nothing sent.
        let unconfirmed = try await setup.run(["messaging", "image", "upload", png, "--id", image, "--environment", "sandbox", "--db", setup.db])
        #expect(unconfirmed.status == 64)
        // Read-only refuses.
        let readOnly = try await setup.run(["messaging", "image", "delete", image, "--environment", "sandbox", "--yes", "--read-only", "--db", setup.db])
        #expect(readOnly.status == 64)
        #expect(setup.simulator.service.requestCount == 0)
        // Sent and recorded.
        let sent = try await setup.run(["messaging", "image", "upload", png, "--id", image, "--environment", "sandbox", "--yes", "--db", setup.db])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(setup.simulator.service.writes.map(\.path) == ["/inApps/v1/messaging/image/\(image)"])
        let rows = try await setup.actionRows()
        #expect(rows.first?["action"] as? String == "upload-image")
        #expect(rows.first?["result"] as? String == "success")
        // Apple's refusal, explained, recorded as refused.
        let again = try await setup.run(["messaging", "image", "upload", png, "--id", image, "--environment", "sandbox", "--yes", "--db", setup.db])
        #expect(again.status == 1)
        words.said(again.stderr)
        let json = try await setup.run(["messaging", "image", "upload", png, "--id", image, "--environment", "sandbox", "--yes", "--db", setup.db, "--format", "json"])
        #expect(((json.json as? [String: Any])?["error"] as? [String: Any])?["api_error"] as? Int == 4_090_000)
        #expect(try await setup.actionRows().first?["result"] as? String == "refused")
        words.check()
        try await setup.stop()
    }

    @Test func contentListsAndStatusShowStatesAndGaps() async throws {
        let words = Wording("messaging-commands")
        let setup = try await Setup()
        let production = ["--environment", "production", "--yes", "--db", setup.db]
        let png = try pngFile(setup, TestPNG.fullSize())
        #expect(try await setup.run(["messaging", "image", "upload", png, "--id", image] + production).status == 0)
        let upload = try await setup.run(
            ["messaging", "message", "upload", "--id", message, "--header", "Stay", "--body", "Half price for 3 months", "--image", image, "--alt-text", "A cat"]
                + production)
        #expect(upload.status == 0, "\(upload.stderr)")
        // Pending in production: it cannot be a default yet.
        let early = try await setup.run(["messaging", "default", "set", "--product-id", Self.product, "--locale", "en-US", "--message", message] + production)
        #expect(early.status == 1)
        #expect(early.stderr.contains("4030017"))

        let list = try await setup.run(["messaging", "message", "list", "--environment", "production", "--format", "json"])
        #expect(list.status == 0, "\(list.stderr)")
        let messages = (list.json as? [String: Any])?["messages"] as? [[String: Any]]
        #expect(messages?.map { $0["state"] as? String } == ["PENDING"])
        let images = try await setup.run(["messaging", "image", "list", "--environment", "production"])
        #expect(images.status == 0)
        words.said(images.stdout)
        let readAuto = try await setup.run(["messaging", "image", "list"])
        #expect(readAuto.status == 64)

        let status = try await setup.run(["messaging", "status", "--environment", "production", "--product-id", Self.product, "--locale", "en-US", "--format", "json"])
        #expect(status.status == 0, "\(status.stderr)")
        let environment = ((status.json as? [String: Any])?["environments"] as? [[String: Any]])?.first
        let gaps = (environment?["gaps"] as? [[String: Any]])?.compactMap { $0["kind"] as? String }
        #expect(gaps == ["no-default", "message-not-approved", "image-not-approved"])
        // With the trail, the message's recorded upload says which image it waits for.
        let traced = try await setup.run(
            ["messaging", "status", "--environment", "production", "--product-id", Self.product, "--locale", "en-US", "--format", "json", "--db", setup.db])
        let tracedGaps = (((traced.json as? [String: Any])?["environments"] as? [[String: Any]])?.first?["gaps"] as? [[String: Any]]) ?? []
        #expect(tracedGaps.compactMap { $0["kind"] as? String } == ["no-default", "message-image-not-approved", "message-not-approved", "image-not-approved"])
        words.said(tracedGaps.compactMap { $0["words"] as? String }.joined(separator: "\n"))
        #expect(environment?["realtime_url"] is NSNull)
        let gapsText = try await setup.run(["messaging", "status", "--environment", "production", "--product-id", Self.product, "--locale", "en-US"])
        words.said(gapsText.stdout)

        // Apple's review, then the default is taken and the gaps close.
        for id in [message, image] {
            #expect(setup.simulator.service.retention.approve(id) != nil)
        }
        let set = try await setup.run(["messaging", "default", "set", "--product-id", Self.product, "--locale", "en-US", "--message", message] + production)
        #expect(set.status == 0, "\(set.stderr)")
        let get = try await setup.run(["messaging", "default", "get", "--product-id", Self.product, "--locale", "en-US", "--environment", "production"])
        #expect(get.status == 0)
        words.said(get.stdout)
        let text = try await setup.run(["messaging", "status", "--environment", "production", "--product-id", Self.product, "--locale", "en-US"])
        #expect(text.status == 0)
        words.said(text.stdout)
        words.check()
        try await setup.stop()
    }

    @Test func deletesGoThroughTheGateAndAnImageInUseIsRefused() async throws {
        let setup = try await Setup()
        let sandbox = ["--environment", "sandbox", "--yes", "--db", setup.db, "--format", "json"]
        let bullet = "1C0FFEE0-0000-4000-8000-000000000001"
        #expect(try await setup.run(["messaging", "image", "upload", try pngFile(setup, TestPNG.bullet()), "--id", bullet, "--size", "bullet"] + sandbox).status == 0)
        let upload = try await setup.run(
            ["messaging", "message", "upload", "--id", message, "--header", "Stay", "--body", "Half price", "--bullet", "Offline, anywhere,\(bullet.lowercased()),A plane"]
                + sandbox)
        #expect(upload.status == 0, "\(upload.stderr)")
        // The bullet's text keeps its comma; the image id is sent as Apple's library sends it.
        #expect(
            setup.simulator.service.writes.last?.body
                == #"{"body":"Half price","bulletPoints":[{"altText":"A plane","imageIdentifier":"\#(bullet)","text":"Offline, anywhere"}],"header":"Stay"}"#)
        let inUse = try await setup.run(["messaging", "image", "delete", bullet] + sandbox)
        #expect(inUse.status == 1)
        #expect(((inUse.json as? [String: Any])?["error"] as? [String: Any])?["api_error"] as? Int == 4_030_019)
        #expect(try await setup.run(["messaging", "message", "delete", message] + sandbox).status == 0)
        #expect(try await setup.run(["messaging", "image", "delete", bullet] + sandbox).status == 0)
        // Deleting a default that is not set is Apple's 200 (idempotent).
        let noDefault = try await setup.run(["messaging", "default", "delete", "--product-id", Self.product, "--locale", "en-US"] + sandbox)
        #expect(noDefault.status == 0)
        #expect((noDefault.json as? [String: Any])?["action"] as? String == "delete-default-message")
        let rows = try await setup.actionRows().compactMap { $0["action"] as? String }
        #expect(rows == ["delete-default-message", "delete-image", "delete-message", "delete-image", "upload-message", "upload-image"])
        try await setup.stop()
    }

    @Test func realtimeURLInProductionWaitsForAPassedPerformanceTest() async throws {
        let setup = try await Setup()
        let refused = try await setup.run(["messaging", "realtime-url", "set", "https://example.com/retention", "--environment", "production", "--yes", "--db", setup.db])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("4030026"))
        setup.simulator.service.retention.markPerformanceTestPassed()
        let set = try await setup.run(["messaging", "realtime-url", "set", "https://example.com/retention", "--environment", "production", "--yes", "--db", setup.db])
        #expect(set.status == 0, "\(set.stderr)")
        let get = try await setup.run(["messaging", "realtime-url", "get", "--environment", "production", "--format", "json"])
        #expect((get.json as? [String: Any])?["realtime_url"] as? String == "https://example.com/retention")
        let delete = try await setup.run(["messaging", "realtime-url", "delete", "--environment", "production", "--yes", "--db", setup.db])
        #expect(delete.status == 0)
        let gone = try await setup.run(["messaging", "realtime-url", "get", "--environment", "production"])
        #expect(gone.status == 1)
        #expect(gone.stderr.contains("4040021"))
        try await setup.stop()
    }
}
