import Crypto
import Foundation
import LocalFiles
import ReceiptCore
import X509

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The simulator's test PKI and In-App Purchase API key kept in a folder (`simulator --pki DIR`),
/// so the root a receiver or a look-up trusts (`--root-ca DIR/root.der`) and the key a look-up
/// signs with (`--private-key-file DIR/api-key.p8`) exist before the simulator serves, and stay
/// the same from one run to the next.
///
/// The folder is made whole or not at all: its files are written into a fresh sibling folder
/// that is then renamed into place, so a second simulator (or a command reading `root.der`)
/// never sees half of it. Mode 0700; the two private keys 0600.
///
/// | file | what |
/// |---|---|
/// | `root.der`, `root.pem` | the test root (for `--root-ca`) |
/// | `intermediate.der`, `leaf.der` | the rest of the chain every payload's `x5c` carries |
/// | `leaf-key.pem` | the leaf's private key, which signs payloads |
/// | `api-key.p8` | a P-256 In-App Purchase key: look-ups sign their tokens with it and the simulator checks them against it |
public struct SimulatorPKIFolder: Sendable {
    public let path: String
    public let pki: AppleTestPKI
    /// The In-App Purchase API key (PKCS#8 PEM in `api-key.p8`).
    public let apiKey: P256.Signing.PrivateKey
    /// Whether this call made the folder.
    public let created: Bool

    public var rootPath: String { path + "/root.der" }
    public var apiKeyPath: String { path + "/api-key.p8" }

    static let files = ["root.der", "root.pem", "intermediate.der", "leaf.der", "leaf-key.pem", "api-key.p8"]

    /// Loads the folder at `path`, making it first when nothing is there.
    public static func open(_ path: String) throws(ServerAPISimulatorError) -> SimulatorPKIFolder {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw ServerAPISimulatorError(.pki, "--pki \(path) is a file; give a folder (it is made on first use)")
            }
            let present = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            if present.isEmpty {
                // An empty folder the user made for it: filled file by file, root.der last.
                try make(in: path, fresh: false)
                return try load(path, created: true)
            }
            return try load(path, created: false)
        }
        let parent = PathNames.parent(of: path)
        let staging = (parent.isEmpty ? "." : parent) + "/.\((path as NSString).lastPathComponent).making-\(UUID().uuidString.prefix(8))"
        try make(in: staging, fresh: true)
        if rename(staging, path) != 0 {
            let code = errno
            try? FileManager.default.removeItem(atPath: staging)
            // Another simulator made it meanwhile: theirs is as good.
            guard code == EEXIST || code == ENOTEMPTY else {
                throw ServerAPISimulatorError(.pki, "--pki \(path) cannot be made: \(String(cString: strerror(code)))")
            }
            return try load(path, created: false)
        }
        return try load(path, created: true)
    }

    /// Writes a new PKI and API key into `folder` (made here, 0700, when `fresh`).
    private static func make(in folder: String, fresh: Bool) throws(ServerAPISimulatorError) {
        let pki = try AppleTestPKI()
        let apiKey = P256.Signing.PrivateKey()
        let contents: [(String, Data)] = [
            ("intermediate.der", Data(pki.intermediateDER)), ("leaf.der", Data(pki.leafDER)),
            ("leaf-key.pem", Data(pki.leafKeyPEM.utf8)), ("api-key.p8", Data(apiKey.pemRepresentation.utf8)),
            ("root.pem", Data(pki.rootPEM.utf8)),
            // Last: a reader that finds root.der finds the rest.
            ("root.der", Data(pki.rootDER)),
        ]
        do {
            if fresh { try FilePermissions.createPrivateDirectory(atPath: folder) }
            for (name, data) in contents {
                let target = folder + "/" + name
                let partial = target + ".partial"
                try FilePermissions.createPrivateFile(atPath: partial)
                try data.write(to: URL(fileURLWithPath: partial))
                if name.hasSuffix(".der") || name == "root.pem" { _ = chmod(partial, 0o644) }
                guard rename(partial, target) == 0 else { throw FileCreationError(path: target, what: "file", errno: errno) }
            }
        } catch let error as FileCreationError {
            throw ServerAPISimulatorError(.pki, "--pki: \(error)")
        } catch {
            throw ServerAPISimulatorError(.pki, "--pki \(folder) cannot be written: \(error.localizedDescription)")
        }
    }

    private static func load(_ path: String, created: Bool) throws(ServerAPISimulatorError) -> SimulatorPKIFolder {
        func read(_ name: String) throws(ServerAPISimulatorError) -> Data {
            guard let data = FileManager.default.contents(atPath: path + "/" + name) else {
                throw ServerAPISimulatorError(
                    .pki, "--pki \(path) has no readable \(name) (it holds \(files.joined(separator: ", "))); remove the folder to make a new one")
            }
            return data
        }
        let root = try read("root.der"), intermediate = try read("intermediate.der"), leaf = try read("leaf.der")
        let leafKeyText = String(decoding: try read("leaf-key.pem"), as: UTF8.self)
        let apiKeyText = String(decoding: try read("api-key.p8"), as: UTF8.self)
        guard let leafKey = try? P256.Signing.PrivateKey(pemRepresentation: leafKeyText) else {
            throw ServerAPISimulatorError(.pki, "--pki \(path): leaf-key.pem is not a P-256 private key in PEM")
        }
        guard let apiKey = try? P256.Signing.PrivateKey(pemRepresentation: apiKeyText) else {
            throw ServerAPISimulatorError(.pki, "--pki \(path): api-key.p8 is not a P-256 private key in PEM")
        }
        let pki: AppleTestPKI
        do {
            pki = try AppleTestPKI(rootDER: [UInt8](root), intermediateDER: [UInt8](intermediate), leafDER: [UInt8](leaf), leafKey: leafKey)
        } catch {
            throw ServerAPISimulatorError(.pki, "--pki \(path): a certificate there cannot be read (DER expected)")
        }
        guard pki.leaf.publicKey == Certificate.PublicKey(leafKey.publicKey) else {
            throw ServerAPISimulatorError(.pki, "--pki \(path): leaf-key.pem is not the key of leaf.der")
        }
        return SimulatorPKIFolder(path: path, pki: pki, apiKey: apiKey, created: created)
    }
}
