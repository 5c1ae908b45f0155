import Foundation
@testable import ReceiptCore

/// Test fixtures copied from the shared corpus, so `swift test` passes in a fresh clone.
enum Fixture {
    static func bytes(_ name: String) throws -> [UInt8] {
        guard let url = Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil) else {
            throw FixtureMissing(name: name)
        }
        return [UInt8](try Data(contentsOf: url))
    }

    static func text(_ name: String) throws -> String {
        String(decoding: try bytes(name), as: UTF8.self)
    }

    /// The DER bytes of a base64 fixture.
    static func der(_ name: String) throws -> [UInt8] {
        try Base64Text.decode(try bytes(name))
    }

    struct FixtureMissing: Error { var name: String }
}

/// `2017-09-11T09:38:34Z` → Date, for expectations written as in the sidecars.
func utc(_ text: String) -> Date {
    AppleDate.parse(text)!
}

/// Expects `body` to throw a ``ReceiptDecodingError`` and returns it.
func decodingError(_ body: () throws -> Any) -> ReceiptDecodingError? {
    do {
        _ = try body()
        return nil
    } catch let error as ReceiptDecodingError {
        return error
    } catch {
        return nil
    }
}

/// The shared corpus beside the package (`../shared/corpus`), when present.
enum SharedCorpus {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("../shared/corpus").standardizedFileURL

    static var isAvailable: Bool { FileManager.default.fileExists(atPath: root.appendingPathComponent("MANIFEST.tsv").path) }

    static func bytes(_ relative: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: root.appendingPathComponent(relative)))
    }

    /// MANIFEST.tsv rows: relative path → notes column.
    static let notes: [String: String] = {
        guard let text = try? String(contentsOf: root.appendingPathComponent("MANIFEST.tsv"), encoding: .utf8) else {
            return [:]
        }
        var rows: [String: String] = [:]
        for line in text.split(separator: "\n").dropFirst() {
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard columns.count >= 6 else { continue }
            rows[String(columns[0])] = String(columns[5])
        }
        return rows
    }()

    static func files(in folder: String, suffix: String) -> [String] {
        notes.keys.filter { $0.hasPrefix(folder + "/") && $0.hasSuffix(suffix) }.sorted()
    }
}
