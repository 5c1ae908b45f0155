import Foundation
import LocalFiles
import ReceiptCore
import ReceiptDemo
import ReceiptRendering
import ReceiptTrust
import Testing
import UntrustedText

/// `inspect`'s run says everything through the console it is handed: the renderings on its
/// standard output, in input order, and each input that could not be read on its standard error.
@Suite struct InspectRunConsoleTests {
    @Test func renderingsAndFailuresGoToTheConsoleItIsHanded() async throws {
        let demo = try #require(InputFiles.demo().first)
        let junk = LoadedInput(source: "paste 1", result: .success(Array("not a receipt".utf8)))
        let capture = ConsoleCapture()
        let pipeline = ReceiptPipeline(at: Date(timeIntervalSince1970: 1_796_000_000))
        let failures = await InspectRun(
            inputs: [.loaded(demo), .loaded(junk)], pipeline: pipeline, format: .json, combine: false, console: capture.console()
        ).run()
        #expect(failures == 1)
        let written = try JSONValue.parse(Array(capture.output.utf8))
        #expect(written.array?.count == 2)
        #expect(written.array?.first?.object?["source"]?.text == demo.source)
        #expect(capture.error.hasPrefix("receiptdash: paste 1: "))
        #expect(capture.error.components(separatedBy: "\n").count == 2)
    }
}
