import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ReceiptService
import Testing

/// `receiptdash receive` as it runs: prints where it listens, stores a genuine notification
/// before answering 200, and on SIGTERM stops, closes the store and exits 0.
@Suite struct ReceiveCommandTests {
    @Test func receivesThenStopsCleanlyOnSIGTERM() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("receive-cli-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let db = folder.appendingPathComponent("audit.sqlite").path

        let receiver = Process()
        receiver.executableURL = InspectCommandTests.binary
        receiver.arguments = ["receive", "--port", "0", "--db", db, "--bundle-id", "com.loki-project.loki-messenger"]
        let out = Pipe()
        receiver.standardOutput = out
        receiver.standardError = FileHandle.nullDevice
        try receiver.run()
        defer { if receiver.isRunning { receiver.terminate() } }
        var banner = ""
        while !banner.contains("\n") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            banner += String(decoding: chunk, as: UTF8.self)
        }
        let url = try #require(banner.split(separator: " ").first { $0.hasPrefix("http://") }.map(String.init))
        #expect(url.hasPrefix("http://127.0.0.1:") && url.hasSuffix("/notifications"), "\(banner)")

        let token = String(
            decoding: try Data(
                contentsOf: InspectCommandTests.packageRoot.appendingPathComponent(
                    "Tests/ReceiptServiceTests/Fixtures/notifications/session-pro_00_DID_RENEW.jws")),
            as: UTF8.self
        ).filter { !$0.isWhitespace }
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = "POST"
        request.httpBody = Data("{\"signedPayload\":\"\(token)\"}".utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)

        kill(receiver.processIdentifier, SIGTERM)
        receiver.waitUntilExit()
        #expect(receiver.terminationReason == .exit)
        #expect(receiver.terminationStatus == 0)
        let rest = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(rest.contains("receiptdash: stopped; store closed"))

        let store = try NotificationStore(path: db)
        #expect(try await store.notifications().map(\.record.notificationUUID) == ["1a7cdc3d-9360-49c3-ae37-0423e4c6e7c7"])
        await store.close()
    }
}
