import Foundation

/// The time zone of the receiver's log timestamps, named once.
public enum LogTimeZone {
    /// Names the system's time zone in `TZ` when it is unset and `/etc/localtime` links to a
    /// zone (`…/zoneinfo/Europe/Paris` gives `Europe/Paris`): with `TZ` unset, glibc looks at
    /// `/etc/localtime` again (a `stat`) for every log line's timestamp; with it named, once.
    public static func nameTheTimeZone() {
        #if os(Linux)
        guard getenv("TZ") == nil,
            let name = zoneName(
                localtime: "/etc/localtime", zoneFolder: getenv("TZDIR").map { String(cString: $0) } ?? "/usr/share/zoneinfo")
        else { return }
        setenv("TZ", name, 0)
        #endif
    }

    /// The zone name `localtime` links to, when glibc, given it as `TZ`, reads the very file
    /// the link leads to from `zoneFolder` (its `TZDIR`): the zone stays the same one. Nil for
    /// a file that is not such a link.
    public static func zoneName(localtime: String, zoneFolder: String) -> String? {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: localtime),
            let range = target.range(of: "zoneinfo/")
        else { return nil }
        let name = String(target[range.upperBound...])
        guard !name.isEmpty, !name.hasPrefix("/"), !name.contains("..") else { return nil }
        let named = URL(fileURLWithPath: zoneFolder + "/" + name).resolvingSymlinksInPath().path
        let linked = URL(fileURLWithPath: localtime).resolvingSymlinksInPath().path
        return named == linked && FileManager.default.fileExists(atPath: named) ? name : nil
    }
}
