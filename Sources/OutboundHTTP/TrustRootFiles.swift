import Foundation
import NIOSSL
import ReceiptCore

extension OutboundHTTPClient {
    /// Reads the certificates of a `--ca-file` (PEM with one or more certificates, or DER): roots
    /// trusted besides the system's for every outgoing TLS connection of the command (Apple's
    /// services, a receiver `doctor` checks, forwarding targets, the simulator's receiver).
    /// Failures are said in words (``TrustRootsError``): the file missing or unreadable, or no
    /// certificate in it.
    public static func loadTrustRoots(file: String) throws(TrustRootsError) -> [NIOSSLCertificate] {
        let bytes: [UInt8]
        guard let handle = FileHandle(forReadingAtPath: file) else {
            var isFolder: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: file, isDirectory: &isFolder)
            throw TrustRootsError(
                .unreadable, "--ca-file \(file): " + (!exists ? "no such file" : isFolder.boolValue ? "is a folder, not a certificate file" : "cannot be read (permission denied)"))
        }
        do {
            bytes = [UInt8](try handle.readToEnd() ?? Data())
            try? handle.close()
        } catch {
            throw TrustRootsError(.unreadable, "--ca-file \(file): cannot be read")
        }
        do {
            if String(decoding: bytes, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") {
                return try NIOSSLCertificate.fromPEMBytes(bytes)
            }
            return [try NIOSSLCertificate(bytes: bytes, format: .der)]
        } catch {
            throw TrustRootsError(.noCertificate, "--ca-file \(file): holds no certificate (PEM or DER) that can be read")
        }
    }
}

/// A `--ca-file` that cannot be used, compared by code.
public struct TrustRootsError: CodedError {
    public enum Code: String, CodedErrorCode, CaseIterable {
        /// Missing, a folder, or not readable.
        case unreadable = "unreadable-ca-file"
        /// No PEM or DER certificate in it.
        case noCertificate = "no-certificate"
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// Certificates trusted besides the system's for outgoing TLS (`--ca-file`).
public typealias TrustRoots = [NIOSSLCertificate]
