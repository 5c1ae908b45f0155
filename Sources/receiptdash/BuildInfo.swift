import CBuildStamp

/// What `receiptdash --version` prints: the release and the commit `make` stamped in.
enum BuildInfo {
    /// The release; `make dist` names its tarball after it.
    static let version = "0.3.0"

    /// The commit the binary was built from (`unknown` for a `swift build` nobody stamped;
    /// `+dirty` when the tree had uncommitted changes).
    static var commit: String { String(cString: receiptdash_build_commit()) }

    static var versionLine: String { "\(version) (commit \(commit))" }
}
