import Foundation
import NotificationReceiver
import Testing
import TestSupport

/// `receive` names the system's zone in `TZ` only when glibc, given that name, reads the very
/// file `/etc/localtime` links to: the log's timestamps keep their zone.
@Suite struct LogTimeZoneTests {
    /// A zone folder with `Europe/Paris` (a file) and `Etc/UTC` (a link to `../UTC`), and a
    /// `localtime` link made by `link(folder, localtime)`.
    func withZones(_ body: (_ root: String, _ zones: String) throws -> Void) throws {
        let root = TemporaryFolder("tz").path
        let zones = root + "/usr/share/zoneinfo"
        defer { try? FileManager.default.removeItem(atPath: root) }
        for folder in [zones + "/Europe", zones + "/Etc", root + "/etc", root + "/elsewhere/zoneinfo/Europe"] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        for file in [zones + "/Europe/Paris", zones + "/UTC", root + "/elsewhere/zoneinfo/Europe/Paris"] {
            #expect(FileManager.default.createFile(atPath: file, contents: Data(file.utf8)))
        }
        try FileManager.default.createSymbolicLink(atPath: zones + "/Etc/UTC", withDestinationPath: "../UTC")
        try body(root, zones)
    }

    @Test func namesTheZoneTheLinkLeadsTo() throws {
        try withZones { root, zones in
            let localtime = root + "/etc/localtime"
            try FileManager.default.createSymbolicLink(atPath: localtime, withDestinationPath: zones + "/Europe/Paris")
            #expect(LogTimeZone.zoneName(localtime: localtime, zoneFolder: zones) == "Europe/Paris")
        }
        // A relative link, and a zone that is itself a link: the same file either way.
        try withZones { root, zones in
            let localtime = root + "/etc/localtime"
            try FileManager.default.createSymbolicLink(atPath: localtime, withDestinationPath: "../usr/share/zoneinfo/Etc/UTC")
            #expect(LogTimeZone.zoneName(localtime: localtime, zoneFolder: zones) == "Etc/UTC")
        }
    }

    @Test func leavesTZUnsetWhenTheNameWouldReadAnotherFile() throws {
        // The link leads outside the folder glibc reads names from: `Europe/Paris` there is
        // another file.
        try withZones { root, zones in
            let localtime = root + "/etc/localtime"
            try FileManager.default.createSymbolicLink(atPath: localtime, withDestinationPath: root + "/elsewhere/zoneinfo/Europe/Paris")
            #expect(LogTimeZone.zoneName(localtime: localtime, zoneFolder: zones) == nil)
        }
        // A zone the folder does not have.
        try withZones { root, zones in
            let localtime = root + "/etc/localtime"
            try FileManager.default.createSymbolicLink(atPath: localtime, withDestinationPath: zones + "/Asia/Tokyo")
            #expect(LogTimeZone.zoneName(localtime: localtime, zoneFolder: zones) == nil)
        }
        // A copied file, not a link; no file at all.
        try withZones { root, zones in
            let localtime = root + "/etc/localtime"
            #expect(FileManager.default.createFile(atPath: localtime, contents: Data("TZif".utf8)))
            #expect(LogTimeZone.zoneName(localtime: localtime, zoneFolder: zones) == nil)
            #expect(LogTimeZone.zoneName(localtime: root + "/etc/none", zoneFolder: zones) == nil)
        }
    }
}
