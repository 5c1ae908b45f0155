import Foundation
import LocalFiles
import ReceiptCore
import ReceiptRendering
import TerminalUI
import Testing

@testable import Dashboard
import TestSupport

/// `e` exports the view as it is (the receipts listed, filtered and sorted; the purchases; the
/// notifications; the input) as JSON or CSV into a folder that can be typed, with mode 0600 and
/// never over an existing file; `Y` copies a row as JSON.
@Suite struct DashboardExportTests {
    typealias Fixture = DashboardTests

    func press(_ state: inout DashboardState, _ keys: KeyEvent...) -> [Effect] {
        keys.flatMap { state.handle($0, environment: Fixture.env) }
    }

    @Test func theFilteredReceiptsExportAsCSVAndJSON() async throws {
        let words = Wording("dashboard-export")
        var state = await Fixture.demoState()
        state.exportFolder = "/srv/qa"
        _ = press(&state, .character("f"))
        for c in "env:sandbox state:expired" { _ = press(&state, .character(c)) }
        _ = press(&state, .enter, .character("e"))
        #expect(state.mode == .export(ExportForm(view: .receipts, format: .json, folder: "/srv/qa")))
        let line = DashboardView.render(state, width: 160, height: 40).text.split(separator: "\n")[38]
        words.said(line)
        _ = press(&state, .tab, .control("u"))
        for c in "/tmp" { _ = press(&state, .character(c)) }
        guard case .save(let csv)? = press(&state, .enter).first else {
            Issue.record("no file")
            return
        }
        #expect(csv.folder == "/tmp")
        #expect(csv.fileName == "receiptdash-receipts-20261122-000000.csv")
        #expect(csv.what == "3 receipts")
        let lines = csv.contents.split(separator: "\n")
        #expect(lines.first == "file,verdict,environment,bundle_id,products,active_subscriptions,expired_subscriptions,refunds,latest_expiry,why")
        #expect(lines.dropFirst().map { String($0.prefix(while: { $0 != "," })) } == [
            "demo/notification-v2-expired.jws", "demo/sandbox-weekly-intro.b64", "demo/verify-response.json",
        ])
        _ = press(&state, .character("e"))
        guard case .save(let json)? = press(&state, .enter).first else {
            Issue.record("no file")
            return
        }
        let list = try #require(try JSONSerialization.jsonObject(with: Data(json.contents.utf8)) as? [[String: Any]])
        #expect(list.map { $0["file"] as? String } == ["demo/notification-v2-expired.jws", "demo/sandbox-weekly-intro.b64", "demo/verify-response.json"])
        #expect(list.first?["latest_expiry"] as? String == "2025-10-02T07:09:07Z")
        // Esc: nothing written.
        _ = press(&state, .character("e"))
        #expect(press(&state, .escape).isEmpty)
        #expect(state.message?.text == "export cancelled: nothing written")
        words.check()
    }

    @Test func purchasesAndRowsExportAsShown() async throws {
        let words = Wording("dashboard-export")
        var state = await Fixture.demoState()
        _ = press(&state, .down, .down, .tab, .character("/"))
        for c in "Month" { _ = press(&state, .character(c)) }
        _ = press(&state, .enter, .character("e"), .tab)
        guard case .save(let file)? = press(&state, .enter).first else {
            Issue.record("no file")
            return
        }
        #expect(file.what == "3 purchases")
        let lines = file.contents.split(separator: "\n").map(String.init)
        #expect(lines == [
            "product_id,type,transaction_id,original_transaction_id,purchase_date,expires_date,state,web_order_line_item_id",
            "org.getpure.pure.Month,auto-renew,340001237736590,340001196262039,2023-06-28T13:54:08Z,2023-07-28T13:54:08Z,expired,340000558053131",
            "org.getpure.pure.Month,auto-renew,340001264290434,340001196262039,2023-07-28T13:54:08Z,2023-08-28T13:54:08Z,expired,340000580178733",
            "org.getpure.pure.Month,auto-renew,340001311555626,340001196262039,2023-09-19T23:26:23Z,2023-10-19T23:26:23Z,expired,340000594256018",
        ])
        // Y on Receipts: that receipt's summary line as JSON.
        state.focus = .receipts
        guard case .copy(let row)? = press(&state, .character("Y")).first else {
            Issue.record("no row")
            return
        }
        let object = try #require(try JSONSerialization.jsonObject(with: Data(row.utf8)) as? [String: Any])
        #expect(object["file"] as? String == "demo/production-subscriptions.b64")
        #expect(object["expired_subscriptions"] as? Int == 1)
        state.focus = .log
        #expect(press(&state, .character("Y")).isEmpty)
        words.said(state.message?.text)
        words.check()
    }

    @Test func aWrittenExportIsPrivateAndNeverOverwrites() throws {
        let folder = TemporaryFolder("receiptdash-export").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = ExportFile(folder: folder, fileName: "receiptdash-receipts-1.csv", contents: "a,b\n", what: "1 receipt")
        let first = try ExportWriter.write(file).get()
        let second = try ExportWriter.write(ExportFile(folder: folder, fileName: file.fileName, contents: "c,d\n", what: "1 receipt")).get()
        #expect(first == folder + "/receiptdash-receipts-1.csv")
        #expect(second == folder + "/receiptdash-receipts-1-2.csv")
        #expect(try String(contentsOfFile: first, encoding: .utf8) == "a,b\n")
        #expect(try String(contentsOfFile: second, encoding: .utf8) == "c,d\n")
        for path in [first, second] {
            let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
            #expect(mode == 0o600)
        }
        // A folder that is not there: said, with its code, nothing written.
        guard case .failure(let error) = ExportWriter.write(ExportFile(folder: folder + "/missing", fileName: "x.csv", contents: "", what: "")) else {
            Issue.record("wrote into a missing folder")
            return
        }
        #expect(error.code == .cannotCreateFile)
        #expect(error.errno == ENOENT)
    }
}
