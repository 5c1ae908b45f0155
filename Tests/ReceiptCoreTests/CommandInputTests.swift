import Foundation
import LocalFiles
import Testing

@testable import AppStoreAPI
@testable import ReceiptCore
@testable import ReceiptTrust
import TestSupport

/// What the commands read through the core: times, `--root-ca` files, the receipt a look-up
/// starts from.
@Suite struct CommandInputTests {
    private func fixturePath(_ name: String) throws -> String {
        try #require(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil)).path
    }

    private func scratch(_ name: String, _ bytes: [UInt8]) throws -> String {
        let folder = TemporaryFolder("command-input").url
        let path = folder.appendingPathComponent(name).path
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        return path
    }

    @Test func aTimeIsISO8601OrADateAloneAtMidnightUTC() {
        #expect(AppleDate.parseArgument("2026-11-25") == Date(timeIntervalSince1970: 1_795_564_800))
        #expect(AppleDate.parseArgument(" 2026-11-25 ") == Date(timeIntervalSince1970: 1_795_564_800))
        #expect(AppleDate.parseArgument("2026-11-25T08:00:00Z") == Date(timeIntervalSince1970: 1_795_593_600))
        // A day the month does not have is refused, not rolled over into March.
        #expect(AppleDate.parseArgument("2026-02-30") == nil)
        for text in ["2026-1-05", "2026-13-01", "yesterday", "", "２０２６-11-25"] {
            #expect(AppleDate.parseArgument(text) == nil, "\(text)")
        }
    }

    @Test func rootFilesAreTestAnchorsAndAFileThatIsNoneIsNamed() throws {
        let words = Wording("command-input")
        let none = try TrustAnchors.apple(testRootFiles: [])
        #expect(none.testRootDERs.isEmpty)
        #expect(none.roots.count == TrustAnchors.apple.roots.count)
        let missing = "/nonexistent/root.der"
        #expect(throws: TrustAnchorFileError.self) { try TrustAnchors.apple(testRootFiles: [missing]) }
        do {
            _ = try TrustAnchors.apple(testRootFiles: [missing])
        } catch {
            words.said(error.description)
        }
        let der = try Fixture.bytes("StoreKitTestCertificate.der")
        let pem = "-----BEGIN CERTIFICATE-----\n" + Data(der).base64EncodedString(options: .lineLength64Characters) + "\n-----END CERTIFICATE-----\n"
        for file in [try scratch("root.der", der), try scratch("root.pem", Array(pem.utf8))] {
            let anchors = try TrustAnchors.apple(testRootFiles: [file])
            #expect(anchors.testRootDERs == [der], "\(file)")
            #expect(anchors.roots.count == TrustAnchors.apple.roots.count + 1)
        }
        let junk = try scratch("junk.pem", Array("-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n".utf8))
        do {
            _ = try TrustAnchors.apple(testRootFiles: [junk])
            Issue.record("a PEM block of junk was taken as a root")
        } catch {
            #expect(error.description.hasPrefix("--root-ca \(junk): "))
        }
        words.check()
    }

    @Test func aReceiptIsLookedUpByItsNewestTransaction() async throws {
        let pipeline = ReceiptPipeline(at: Date())
        let path = try fixturePath("production.b64")
        let query = try await LookupQuery.newestTransaction(in: path, with: pipeline).get()
        guard case .receipt(let source, let id, let verdict) = query else {
            Issue.record("expected a receipt query, got \(query)")
            return
        }
        #expect(source == path)
        #expect(id == "340001311555626")
        #expect(verdict != nil)
    }

    @Test func aReceiptThatCannotBeLookedUpSaysWhy() async throws {
        let pipeline = ReceiptPipeline(at: Date())
        let junk = try scratch("junk.b64", Array("not a receipt".utf8))
        switch await LookupQuery.newestTransaction(in: junk, with: pipeline) {
        case .success(let query): Issue.record("junk looked up as \(query)")
        case .failure(let error): #expect(error.reason.hasPrefix("\(junk): "))
        }
    }
}
