import LocalFiles
import Testing

/// A path's folder, as `NSString.deletingLastPathComponent` gives it, for every shape a user can
/// type, the one-character names it traps on included (`--pki p`, `--db a`).
@Suite struct PathNamesTests {
    @Test(arguments: [
        ("p", ""), ("ab", ""), ("a/b", "a"), ("/a", "/"), ("/", "/"), ("", ""), ("./a", "."), ("p/", ""),
        ("a/b/", "a"), ("a//b", "a"), ("/srv/qa/audit.sqlite", "/srv/qa"), ("~/x", "~"),
    ])
    func theParentFolder(path: String, parent: String) {
        #expect(PathNames.parent(of: path) == parent)
    }
}
