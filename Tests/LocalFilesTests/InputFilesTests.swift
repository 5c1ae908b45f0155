import Foundation
import LocalFiles
import ReceiptCore
import Testing
import TestSupport

/// Inputs as the commands read them: a folder's files in name order (no hidden files, no
/// subfolders), a missing file named, and nothing over the limit read into memory.
@Suite struct InputFilesTests {
    @Test func foldersAreReadInNameOrderWithoutHiddenFilesOrSubfolders() throws {
        let words = Wording("input-files")
        let folder = TemporaryFolder("pipeline").url
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("nested"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for name in ["b.der", "a.b64", ".hidden", "nested/c.der"] {
            try Data(name.utf8).write(to: folder.appendingPathComponent(name))
        }
        let loaded = InputFiles.load([folder.path, folder.appendingPathComponent("missing.der").path], limit: 1024)
        #expect(loaded.map { ($0.source as NSString).lastPathComponent } == ["a.b64", "b.der", "missing.der"])
        #expect(try loaded[0].result.get() == Array("a.b64".utf8))
        words.said(loaded[2].result.failureReason)
        words.check()
    }

    /// What a folder lists: files and links to files, in name order; not folders, links to
    /// folders, broken links or hidden names; the path joined once, however the folder was
    /// written.
    @Test func aFolderListsItsFilesAndLinksToFilesInNameOrder() throws {
        let folder = TemporaryFolder("listing").path
        try FileManager.default.createDirectory(atPath: folder + "/sub", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for name in ["b.der", "A.der", "é.b64", ".hidden", "sub/inner.der"] {
            try Data(name.utf8).write(to: URL(fileURLWithPath: folder + "/" + name))
        }
        try FileManager.default.createSymbolicLink(atPath: folder + "/link-to-b", withDestinationPath: folder + "/b.der")
        try FileManager.default.createSymbolicLink(atPath: folder + "/link-to-sub", withDestinationPath: folder + "/sub")
        try FileManager.default.createSymbolicLink(atPath: folder + "/broken", withDestinationPath: folder + "/nowhere")
        // A pipe, whose read would wait for a writer.
        #expect(mkfifo(folder + "/pipe", 0o600) == 0)
        let expected = ["A.der", "b.der", "link-to-b", "é.b64"].map { folder + "/" + $0 }
        #expect(InputFiles.origins([folder]) == expected.map(InputFiles.Origin.file))
        #expect(InputFiles.origins([folder + "//"]) == expected.map(InputFiles.Origin.file))
        #expect(InputFiles.origins([folder + "/sub/"]) == [.file(folder + "/sub/inner.der")])
    }

    @Test func inputsOverTheLimitAreNotRead() throws {
        let words = Wording("input-files")
        let scratch = TemporaryFolder("big")
        defer { scratch.remove() }
        let file = scratch.appending("big")
        try Data(count: 2048).write(to: file)
        let loaded = InputFiles.load([file.path], limit: 1024)
        #expect(loaded.count == 1)
        words.said(loaded[0].result.failureReason)
        words.check()
    }
}

extension Result where Failure == ReceiptDecodingError {
    fileprivate var failureReason: String? {
        if case .failure(let error) = self { return error.reason }
        return nil
    }
}
