import Foundation
import ReceiptCore
import ReceiptTrust

extension TrustAnchors {
    /// Apple's roots plus the certificates in `files` (DER, or the first PEM block of each) as
    /// test anchors: `--root-ca`. A failure is a sentence naming the file.
    public static func apple(testRootFiles files: [String]) throws(TrustAnchorFileError) -> TrustAnchors {
        guard !files.isEmpty else { return .apple }
        var ders: [[UInt8]] = []
        for path in files {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw TrustAnchorFileError(.unreadable, "--root-ca: \(path) cannot be read.")
            }
            ders.append(try certificateDER([UInt8](data), what: "--root-ca \(path)"))
        }
        do {
            return try TrustAnchors.apple.addingTestRoots(ders)
        } catch {
            throw TrustAnchorFileError(.notACertificate, "--root-ca: not a certificate (\(error)).")
        }
    }

    /// DER as is, or the first PEM certificate block.
    static func certificateDER(_ bytes: [UInt8], what: String) throws(TrustAnchorFileError) -> [UInt8] {
        guard let text = String(validating: bytes, as: UTF8.self), text.contains("-----BEGIN CERTIFICATE-----") else { return bytes }
        let body = text.components(separatedBy: "-----BEGIN CERTIFICATE-----")[1].components(separatedBy: "-----END")[0]
        do {
            return try Base64Text.decode(Array(body.filter { !$0.isWhitespace }.utf8), what: "\(what) PEM")
        } catch {
            throw TrustAnchorFileError(.notACertificate, "\(what): \((error as? ReceiptDecodingError)?.reason ?? "\(error)")")
        }
    }
}

/// A `--root-ca` file that cannot be used, compared by code.
public struct TrustAnchorFileError: CodedError {
    public enum Code: String, CodedErrorCode, CaseIterable {
        /// The file cannot be read.
        case unreadable = "unreadable-root-file"
        /// The file holds no certificate.
        case notACertificate = "not-a-certificate"
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// `inspect --storekit-cert`: the StoreKit certificate Xcode exports, DER, or PEM as Xcode's
/// "Save Certificate" and openssl write it.
public enum StoreKitCertificateFile {
    /// The certificate's DER; nil when the file cannot be read. A PEM body that is not base64
    /// throws the decoder's error.
    public static func read(_ path: String) throws -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let bytes = [UInt8](data)
        guard let text = String(bytes: bytes, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") else { return bytes }
        let body = text.components(separatedBy: "\n").filter { !$0.hasPrefix("-----") }.joined()
        return try Base64Text.decode(Array(body.utf8), what: "--storekit-cert PEM")
    }
}
