import CBuildStamp
import Foundation

/// What `receiptdash --version` prints: the release and the commit it was built from.
enum BuildInfo {
    /// The release; `make dist` names its tarball after it.
    static let version = "0.3.0"

    /// The commit the binary was built from: the one `make` stamped (`+dirty` when the tree had
    /// uncommitted changes), else the checkout's commit the compiler read (``checkoutCommit``),
    /// else `unknown` (a source tarball built with `swift build`).
    static var commit: String {
        let stamped = String(cString: receiptdash_build_commit())
        if stamped != "unknown" { return stamped }
        return checkoutCommit(
            head: String(cString: receiptdash_git_head()), ref: String(cString: receiptdash_git_ref()),
            refName: String(cString: receiptdash_git_ref_name()), packedRefs: String(cString: receiptdash_git_packed_refs())) ?? "unknown"
    }

    /// The commit `head` (a `HEAD` file) names, 12 digits as `make` stamps it: a detached
    /// commit itself, or the commit in `ref` when `head` names the branch `refName` that `ref`
    /// was read from, or its line in `packedRefs` when it has no file of its own (a fresh
    /// clone). Nil when it cannot be known (another branch than the package was read with):
    /// never a guess.
    static func checkoutCommit(head: String, ref: String, refName: String, packedRefs: String = "") -> String? {
        let head = head.trimmingCharacters(in: .whitespacesAndNewlines)
        if isCommit(head) { return String(head.prefix(12)) }
        guard head.hasPrefix("ref: "), !refName.isEmpty, head.dropFirst(5) == refName[...] else { return nil }
        let commit = ref.trimmingCharacters(in: .whitespacesAndNewlines)
        if isCommit(commit) { return String(commit.prefix(12)) }
        // `packed-refs`: `<commit> <name>` lines, comments (`#`) and peeled tags (`^`) between.
        for line in packedRefs.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[1] == refName[...], isCommit(String(parts[0])) { return String(parts[0].prefix(12)) }
        }
        return nil
    }

    private static func isCommit(_ text: String) -> Bool {
        (text.utf8.count == 40 || text.utf8.count == 64) && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    static var versionLine: String { "\(version) (commit \(commit))" }
}
