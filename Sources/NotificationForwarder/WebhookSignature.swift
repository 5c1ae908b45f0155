import Crypto
import Foundation
import ReceiptCore

/// A Standard Webhooks signing secret: `whsec_` and the base64 of 24 to 64 key bytes. The HMAC
/// key is the decoded bytes. Its description never shows the key.
public struct WebhookSecret: Sendable, CustomStringConvertible {
    let key: SymmetricKey

    /// Reads `text` (surrounding white space ignored, as a file's last newline).
    public init(_ text: String) throws(ForwardError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix("whsec_") else {
            throw ForwardError(.secret, "the forwarding secret does not start with whsec_ (Standard Webhooks secrets are whsec_ and base64)")
        }
        guard let bytes = Data(base64Encoded: String(trimmed.dropFirst(6))) else {
            throw ForwardError(.secret, "the forwarding secret is not base64 after whsec_")
        }
        guard (24...64).contains(bytes.count) else {
            throw ForwardError(.secret, "the forwarding secret holds \(bytes.count) bytes; Standard Webhooks takes 24 to 64")
        }
        key = SymmetricKey(data: bytes)
    }

    /// Every secret in a secret file's text: one `whsec_` secret a line (blank lines and lines
    /// starting with `#` passed by), at least one. Several while a secret is rotated: each
    /// delivery is signed with each, so consumers holding either accept it.
    public static func all(_ text: String) throws(ForwardError) -> [WebhookSecret] {
        var secrets: [WebhookSecret] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
            do {
                secrets.append(try WebhookSecret(trimmed))
            } catch {
                throw ForwardError(.secret, "line \(number + 1): \(error.reason)")
            }
        }
        guard !secrets.isEmpty else { throw ForwardError(.secret, "no whsec_ secret in it (one a line)") }
        guard secrets.count <= 8 else { throw ForwardError(.secret, "\(secrets.count) secrets: at most 8 (one or two while rotating)") }
        return secrets
    }

    /// A new random secret of 32 bytes, as text.
    public static func generate() -> String {
        "whsec_" + SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() }
    }

    public var description: String { "whsec_••••" }
}

/// The Standard Webhooks signature: `v1,` and the base64 of HMAC-SHA256 over
/// `{webhook-id}.{webhook-timestamp}.{body}`, the body exactly as sent.
public enum WebhookSignature {
    public static func sign(id: String, timestamp: Int64, body: [UInt8], secret: WebhookSecret) -> String {
        var hmac = HMAC<SHA256>(key: secret.key)
        hmac.update(data: Array("\(id).\(timestamp).".utf8))
        hmac.update(data: body)
        return "v1," + Data(hmac.finalize()).base64EncodedString()
    }

    /// Whether one of the space-separated signatures in `header` is ours for this message, and
    /// the timestamp is within `tolerance` seconds of `now` (what a consumer checks).
    public static func verify(
        id: String, timestamp: Int64, body: [UInt8], header: String, secret: WebhookSecret, now: Date, tolerance: Double = 300
    ) -> Bool {
        guard abs(now.timeIntervalSince1970 - Double(timestamp)) <= tolerance else { return false }
        let expected = Array(sign(id: id, timestamp: timestamp, body: body, secret: secret).utf8)
        return header.split(separator: " ").contains { candidate in
            let given = Array(candidate.utf8)
            // Compared in constant time for equal lengths.
            guard given.count == expected.count else { return false }
            return zip(given, expected).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
        }
    }
}

/// Why forwarding could not be set up or a delivery failed. Equality compares only the code.
public struct ForwardError: CodedError {
    public enum Code: String, CaseIterable, CodedErrorCode {
        /// The secret is not a Standard Webhooks secret.
        case secret
        /// The URL is not one forwarding may send to.
        case url
        /// The header file cannot be used.
        case header
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}
