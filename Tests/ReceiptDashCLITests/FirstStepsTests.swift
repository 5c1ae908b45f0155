import Foundation
import Testing
import TestSupport

/// What a new user meets first, as issue 24 found it: the binary reached through a symlink on
/// `PATH`, the simulator's root needed before the simulator serves, `inspect --at`.
@Suite(.timeLimit(.minutes(2))) struct FirstStepsTests {
    let cli = InspectCommandTests()

    func scratch() throws -> URL {
        let folder = TemporaryFolder("first-steps").url
        return folder
    }

    /// Runs `command` through `sh` with only `bin` (holding a `receiptdash` symlink) on `PATH`,
    /// as a user who installed it by linking it into `~/bin` does.
    func shell(_ command: String, bin: URL, in folder: URL) async throws -> InspectCommandTests.Run {
        try await NewUserCommandTests.run(
            ["-c", command], environment: ["PATH": bin.path + ":/usr/bin:/bin", "HOME": folder.path, "TERM": "xterm"], inheriting: false,
            currentDirectory: folder, executable: URL(fileURLWithPath: "/bin/sh"))
    }

    /// `--theme light` is found when `receiptdash` is a symlink found on `PATH` (argv[0] is
    /// then a bare name): the themes are looked up beside the binary's real path, each folder
    /// once. Without a terminal the dashboard then stops with its own sentence, not a theme error.
    @Test func themesAreFoundThroughASymlinkOnPath() async throws {
        let words = Wording("first-steps")
        let folder = try scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let bin = folder.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: bin.appendingPathComponent("receiptdash").path, withDestinationPath: InspectCommandTests.binary.path)
        let light = try await shell("receiptdash --theme light", bin: bin, in: folder)
        #expect(light.status == 2)
        words.said(light.stderr)
        let missing = try await shell("receiptdash --theme no-such-theme", bin: bin, in: folder)
        #expect(missing.status == 64)
        #expect(missing.stderr.hasPrefix("receiptdash: theme \"no-such-theme\" not found (looked in \(folder.path)/Themes, "))
        #expect(!missing.stderr.contains("Usage:"))
        let packageThemes = InspectCommandTests.packageRoot.appendingPathComponent("Themes").path
        #expect(missing.stderr.components(separatedBy: packageThemes + ",").count + missing.stderr.components(separatedBy: packageThemes + ")").count == 3)
        words.check()
    }

    /// `simulator --pki DIR --init` makes the folder and exits, so the README's next line can
    /// read `DIR/root.der` at once; a second run finds it.
    @Test func simulatorInitMakesThePKIFolderBeforeAnythingNeedsIt() async throws {
        let words = Wording("first-steps")
        let folder = try scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try await cli.run(["simulator", "--pki", "sim-pki", "--init"], currentDirectory: folder)
        #expect(first.status == 0, "\(first.stderr)")
        words.said(first.stdout)
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("sim-pki/root.der").path))
        let second = try await cli.run(["simulator", "--pki", "sim-pki", "--init"], currentDirectory: folder)
        words.said(second.stdout)
        let alone = try await cli.run(["simulator", "--init"], currentDirectory: folder)
        #expect(alone.status == 64)
        words.said(alone.stderr)
        words.check()
    }

    /// `inspect --at` counts only what had begun (the text of the analysis test, end to end).
    @Test func inspectAtCountsOnlyWhatHadBegun() async throws {
        let demo = InspectCommandTests.packageRoot.appendingPathComponent("Sources/ReceiptDemo/Demo/sandbox-weekly-intro.b64").path
        let run = try await cli.run(["inspect", "--at", "2020-07-14T21:50:00Z", demo])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("\n    3 renewals, 3 paid\n"))
        #expect(!run.stdout.contains("annual_39.99"  + "_2_week_intro\n    ["))
        #expect(!run.stdout.contains("gap of 7 days"))
        // A date alone is that day's midnight UTC, as everywhere a command takes a time.
        let day = try await cli.run(["inspect", "--at", "2020-07-15", demo])
        #expect(day.status == 0, "\(day.stderr)")
        #expect(day.stdout.contains("\n  Judged at 2020-07-15T00:00:00Z\n"))
        #expect(day.stdout.contains("\n    7 renewals, 7 paid\n"))
        let json = try await cli.run(["inspect", "--format", "json", "--at", "2020-07-14T21:50:00Z", demo])
        let object = try #require(json.json as? [String: Any])
        let subscriptions = try #require(object["subscriptions"] as? [[String: Any]])
        #expect(subscriptions.first?["paid_periods"] as? Int == 3)
    }
}
