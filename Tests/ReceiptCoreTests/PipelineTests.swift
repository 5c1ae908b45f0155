import Foundation
import LocalFiles
import Testing
import TestSupport

@testable import ReceiptCore
@testable import ReceiptTrust

/// The one pipeline every front end uses: reading inputs, splitting pastes, and
/// decode → trust → analysis, with failures kept per input.
@Suite struct PipelineTests {
    static let instant = utc("2024-03-01T00:00:00Z")
    let pipeline = ReceiptPipeline(at: PipelineTests.instant, trustOptions: TrustOptions(now: PipelineTests.instant))

    @Test func judgesAReceiptThroughEveryStage() async throws {
        let judged = await pipeline.judge(source: "production.b64", bytes: try Fixture.bytes("production.b64"))
        let decoded = try #require(judged.decoded)
        #expect(decoded.format == .pkcs7)
        #expect(decoded.bundleID == "org.getpure.pure-iphone")
        #expect(judged.trust?.verdict == .valid)
        #expect(judged.trust?.validationTime == utc("2024-02-23T17:27:16Z"))
        #expect(judged.analysis?.at == Self.instant)
        #expect(judged.analysis == PurchaseAnalysis.analyze([decoded], at: Self.instant))
        #expect(judged.error == nil)
    }

    @Test func trustAndAnalysisCanBeLeftOut() async throws {
        let quick = ReceiptPipeline(at: Self.instant, checksTrust: false, analyses: false)
        let judged = await quick.judge(source: "xcode.der", bytes: try Fixture.bytes("xcode.der"))
        #expect(judged.decoded?.environment == .xcode)
        #expect(judged.trust == nil)
        #expect(judged.analysis == nil)
    }

    /// A bad input is a result with its error and its bytes, never a thrown error.
    @Test func undecodableInputKeepsItsErrorAndBytes() async {
        let bytes = Array("MIIT!!!not base64".utf8)
        let judged = await pipeline.judge(source: "paste 1", bytes: bytes)
        #expect(judged.error?.code == .invalidBase64)
        #expect(judged.bytes == bytes)
        #expect(judged.trust == nil)
        #expect(judged.analysis == nil)
    }

    /// An input that could not be read has no bytes: front ends tell "unreadable" from "undecodable" by that.
    @Test func unreadableInputHasNoBytes() async {
        let words = Wording("pipeline")
        let judged = await pipeline.judge(
            LoadedInput(source: "/nowhere/a.der", result: .failure(.init(.emptyInput, "no such file"))))
        #expect(judged.bytes == nil)
        words.said(judged.error?.reason)
        words.check()
    }

    @Test func judgesInOrder() async throws {
        let inputs = [
            LoadedInput(source: "a", result: .success(try Fixture.bytes("xcode.der"))),
            LoadedInput(source: "b", result: .success(Array("{}".utf8))),
            LoadedInput(source: "c", result: .success(try Fixture.bytes("notification-v2.jws"))),
        ]
        let judged = await pipeline.judge(inputs)
        #expect(judged.map(\.source) == ["a", "b", "c"])
        #expect(judged.map { $0.decoded?.format } == [.pkcs7, nil, .jwsNotification])
    }

    // MARK: - Pastes

    @Test func pasteSplitsOnBlankLinesAndKeepsWrappedBase64Together() throws {
        let production = try Fixture.text("production.b64").trimmingCharacters(in: .whitespacesAndNewlines)
        let wrapped = stride(from: 0, to: production.count, by: 76).map { offset -> String in
            let start = production.index(production.startIndex, offsetBy: offset)
            let end = production.index(start, offsetBy: min(76, production.count - offset))
            return String(production[start..<end])
        }.joined(separator: "\n")
        let jws = try Fixture.text("notification-v2.jws").trimmingCharacters(in: .whitespacesAndNewlines)
        let inputs = InputFiles.paste(wrapped + "\n\n\n" + jws + "\n", firstNumber: 4)
        #expect(inputs.map(\.source) == ["paste 4", "paste 5"])
        #expect(try inputs[0].result.get() == Array(wrapped.utf8))
        #expect(try inputs[1].result.get() == Array(jws.utf8))
    }

    /// Terminals send a pasted newline as CR: a paste of two receipts on two lines is two receipts.
    @Test func pasteOneReceiptPerLineWithCarriageReturns() throws {
        let production = try Fixture.text("production.b64").trimmingCharacters(in: .whitespacesAndNewlines)
        let jws = try Fixture.text("notification-v2.jws").trimmingCharacters(in: .whitespacesAndNewlines)
        let inputs = InputFiles.paste(production + "\r" + jws + "\r\n")
        #expect(inputs.map(\.source) == ["paste 1", "paste 2"])
        #expect(try inputs[1].result.get() == Array(jws.utf8))
        #expect(InputFiles.paste(" \n\n \r ").isEmpty)
    }
}

extension Result where Failure == ReceiptDecodingError {
    var failureReason: String? {
        if case .failure(let error) = self { return error.reason }
        return nil
    }
}
