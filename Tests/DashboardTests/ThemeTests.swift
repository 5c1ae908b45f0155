import Foundation
import Testing
@testable import Dashboard
import TerminalUI

@Suite struct ThemeTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Themes")

    /// Every theme file loads, names every role it sets correctly, and uses valid colours.
    @Test func everyThemeFileLoads() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path).filter { $0.hasSuffix(".theme") }.sorted()
        #expect(files == ["colorblind.theme", "default.theme", "high-contrast.theme", "light.theme", "mono.theme"])
        for file in files {
            let text = try String(contentsOf: Self.folder.appendingPathComponent(file), encoding: .utf8)
            let theme = try Theme.parse(text, name: file)
            #expect(theme.name == (file as NSString).deletingPathExtension)
            // Every role is given explicitly, so a theme never silently inherits.
            for role in ColorRole.allCases {
                #expect(text.contains("\n\(role.rawValue) ="), "\(file) does not set \(role.rawValue)")
            }
        }
        let mono = try Theme.parse(String(contentsOf: Self.folder.appendingPathComponent("mono.theme"), encoding: .utf8), name: "mono")
        #expect(mono.isMono)
        #expect(mono.styles.values.allSatisfy { $0.foreground == .default && $0.background == .default })
    }

    /// The colour-blind theme never tells ok from error by a red/green pair alone.
    @Test func colorblindThemeAvoidsRedGreen() throws {
        let theme = try Theme.parse(String(contentsOf: Self.folder.appendingPathComponent("colorblind.theme"), encoding: .utf8), name: "colorblind")
        let reds: Set<ThemeColor> = [.ansi(1), .ansi(9)]
        let greens: Set<ThemeColor> = [.ansi(2), .ansi(10)]
        for role in ColorRole.allCases {
            let fg = theme.style(role).foreground
            #expect(!reds.contains(fg) && !greens.contains(fg), "\(role) uses red or green")
        }
    }

    @Test(arguments: [
        ("purple = red", "line 1: unknown role \"purple\""),
        ("ok = chartreuse", "line 1: bad colour \"chartreuse\" for ok"),
        ("ok = red blue green", "line 1: ok has 3 colours; give a foreground and at most a background"),
        ("# c\nok red", "line 2: expected 'role = colours', got \"ok red\""),
        ("ok = color300", "line 1: bad colour \"color300\" for ok"),
    ])
    func badThemesSayWhatAndWhere(text: String, message: String) {
        do {
            _ = try Theme.parse(text, name: "x")
            Issue.record("parsed")
        } catch {
            #expect("\(error)".hasPrefix(message), "\(error)")
        }
    }

    @Test func colourParsingAndDegradation() {
        #expect(ThemeColor(parsing: "bright-blue") == .ansi(12))
        #expect(ThemeColor(parsing: "color208") == .indexed(208))
        #expect(ThemeColor(parsing: "7") == .ansi(7))
        #expect(ThemeColor(parsing: "#ff8700") == .rgb(255, 135, 0))
        #expect(ThemeColor.rgb(255, 135, 0).degraded(to: 256) == 208)
        #expect(ThemeColor.rgb(128, 128, 128).degraded(to: 256) == 244)
        #expect(ThemeColor.rgb(250, 10, 10).degraded(to: 16) == 9)
        #expect(ThemeColor.rgb(250, 10, 10).degraded(to: 8) == 1)
        #expect(ThemeColor.indexed(196).degraded(to: 16) == 9)
        #expect(ThemeColor.ansi(12).degraded(to: 8) == 4)
        #expect(ThemeColor.default.degraded(to: 256) == nil)
    }

    @Test func noColorAndDumbTerminalGiveMono() throws {
        #expect(try ThemeCatalog.resolve("light", environment: ["NO_COLOR": "1"]).isMono)
        #expect(try ThemeCatalog.resolve(nil, environment: ["TERM": "dumb"]).isMono)
        #expect(try ThemeCatalog.resolve(nil, environment: ["NO_COLOR": ""]).isMono == false)
        #expect(try ThemeCatalog.resolve(Self.folder.appendingPathComponent("light.theme").path, environment: [:]).name == "light")
        #expect(throws: Theme.ParseError.self) { try ThemeCatalog.resolve("no-such-theme", environment: [:]) }
    }
}

@Suite struct KeyMapDocumentationTests {
    /// The dashboard page's key list (docs/dashboard.md) is the keymap table itself.
    @Test func dashboardPageListsEveryKey() throws {
        let page = try String(
            contentsOf: ThemeTests.folder.deletingLastPathComponent().appendingPathComponent("docs").appendingPathComponent("dashboard.md"),
            encoding: .utf8)
        #expect(page.contains(KeyMap.markdown))
    }

    /// No two bindings claim the same key.
    @Test func keysAreUnique() {
        let all = KeyMap.bindings.flatMap(\.keys)
        #expect(Set(all).count == all.count)
    }
}
