import AppStoreAPI
import ReceiptCore
import Foundation
import UntrustedText

/// `receiptdash verify`'s output: a receipt's row as JSON or text (status, environment, every
/// attempt, Apple's answer decoded, or the error that ended it), and what
/// `--send-undecodable` sends for an input it cannot decode.
public enum VerifyRendering {
    /// An input for `--send-undecodable` with every `password` member removed (at any depth)
    /// when it is JSON that holds one (`{"receipt-data":…,"password":…}` pasted from a request
    /// body), written again as compact JSON; the bytes as they are when they do not mention
    /// `"password"`; nil when they do but are not JSON it can be removed from (then nothing
    /// is sent: the secret would go with it).
    public static func withoutPassword(_ bytes: [UInt8]) -> [UInt8]? {
        let marker = Array(#""password""#.utf8)
        guard bytes.count >= marker.count,
            (0...(bytes.count - marker.count)).contains(where: { bytes[$0..<$0 + marker.count].elementsEqual(marker) })
        else { return bytes }
        guard let value = try? JSONValue.parse(bytes) else { return nil }
        func stripped(_ value: JSONValue) -> JSONValue {
            switch value {
            case .object(let members):
                var kept: [String: JSONValue] = [:]
                for (name, member) in members where name != "password" { kept[name] = stripped(member) }
                return .object(kept)
            case .array(let items): return .array(items.map(stripped))
            default: return value
            }
        }
        let clean = stripped(value)
        guard clean != value else { return bytes }
        return Array(clean.compactJSON.utf8)
    }

    /// What `--send-undecodable` sends for an input: its text without whitespace when that is
    /// base64, else the base64 of its bytes; nil for an empty input.
    public static func asIs(_ bytes: [UInt8]) -> String? {
        let text = bytes.filter { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) }
        guard !text.isEmpty else { return nil }
        let alphabet = text.allSatisfy { b in
            (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || (0x30...0x39).contains(b) || b == 0x2B || b == 0x2F || b == 0x3D
        }
        return alphabet ? String(decoding: text, as: UTF8.self) : Data(bytes).base64EncodedString()
    }

    /// A receipt's row: status, environment and every attempt, with Apple's answer decoded, or
    /// the error that ended it (with the attempts made all the same).
    public static func json(source: String, _ result: VerificationOutcome?) -> JSONValue {
        var o: [String: JSONValue] = ["source": .string(source)]
        func error(code: String, message: String) -> JSONValue { .object(["code": .string(code), "message": .string(message)]) }
        switch result {
        case let outcome?:
            o["status"] = outcome.status.map { .integer(Int64($0)) } ?? .null
            // Without an answer, the environment last asked.
            o["environment"] = (outcome.environment ?? outcome.attempts.last?.endpoint.rawValue).map(JSONValue.string) ?? .null
            o["attempts"] = .array(
                outcome.attempts.map { a in
                    var attempt: [String: JSONValue] = [
                        "url": .string(a.url), "latency_ms": .number((a.latencyMilliseconds * 10).rounded() / 10),
                    ]
                    switch a.result {
                    case .apple(let status, let retryable):
                        attempt["status"] = .integer(Int64(status))
                        if let retryable { attempt["is-retryable"] = .bool(retryable) }
                    case .http(let status): attempt["http_status"] = .integer(Int64(status))
                    case .transport(let failure):
                        attempt["error"] = error(code: failure.code.description, message: failure.description)
                    }
                    if let w = a.retryAfterSeconds { attempt["retried_after_s"] = .number((w * 1000).rounded() / 1000) }
                    return .object(attempt)
                })
            if let e = outcome.explanation {
                o["explanation"] = .object([
                    "title": .string(e.title), "explanation": .string(e.explanation), "next_step": .string(e.nextStep),
                    "retryable": .bool(e.retryable),
                ])
            }
            if let response = outcome.response { o["response"] = InspectJSON.object(for: response) }
            if let failure = outcome.failure { o["error"] = error(code: failure.code.description, message: failure.reason) }
        case nil:
            o["status"] = .null
            o["error"] = error(code: VerificationFailure.Code.notVerified.description, message: "not verified")
        }
        return .object(o)
    }

    public static func text(source: String, _ result: VerificationOutcome?) -> String {
        var lines = [SafeText.escaped(source)]
        switch result {
        case let outcome?:
            let e = outcome.explanation
            if let failure = outcome.failure {
                lines.append("  Failed          \(SafeText.escaped(failure.reason))")
            } else {
                lines.append("  Status          \(outcome.status.map(String.init) ?? "?") \(e?.title ?? "")")
            }
            if let e {
                lines.append("                  \(e.explanation)")
                lines.append("  Next            \(e.nextStep)")
            }
            lines.append("  Environment     \(SafeText.escaped(outcome.environment ?? outcome.attempts.last?.endpoint.rawValue ?? "?"))")
            for (i, a) in outcome.attempts.enumerated() {
                var text = "  Attempt \(i + 1)       \(SafeText.escaped(a.url)) → "
                text += SafeText.escaped(a.result.description)
                text += String(format: " in %.0f ms", a.latencyMilliseconds)
                if let w = a.retryAfterSeconds { text += String(format: ", retried after %.2f s", w) }
                lines.append(text)
            }
            if let response = outcome.response, let bundle = response.bundleID {
                lines.append("  Bundle id       \(SafeText.escaped(bundle))")
                lines.append("  Purchases       \(response.allPurchases.count)")
            }
        case nil:
            lines.append("  Failed          not verified")
        }
        return lines.joined(separator: "\n") + "\n\n"
    }
}
