import ReceiptCore
import Foundation

/// The one loopback rule, for every check of a host or a URL in receiptdash: plain `http://`
/// to verifyReceipt, the App Store Server API and a notification receiver, the PostgreSQL
/// `sslmode` default, the receiver's note about plain HTTP on a public address.
///
/// A host is loopback when it is, case aside:
/// - `localhost`, and no other name: `localhost.example.com` is a public name, and so is
///   `localhost.` (a fully qualified name: the resolver asks DNS for it, not `/etc/hosts`,
///   and DNS may answer anything);
/// - an IPv4 address in 127.0.0.0/8 written as four decimal parts (`127.0.0.1`,
///   `127.255.255.254`), each 0–255 without leading zeros: `127.db.example.com` is a name
///   that anyone's DNS may point anywhere, and `0177.0.0.1` or `127.1` are spellings some
///   resolvers read differently;
/// - `::1` (also `0:0:0:0:0:0:0:1`), bare or in brackets (`[::1]`, as a URL writes it).
///
/// Anything else, `0.0.0.0` and `::` (every interface) included, is not.
public enum Loopback {
    public static func isLoopback(host: String) -> Bool {
        var h = host.lowercased()
        if h.hasPrefix("["), h.hasSuffix("]"), h.count >= 2 { h = String(h.dropFirst().dropLast()) }
        if h == "localhost" { return true }
        if h == "::1" || h == "0:0:0:0:0:0:0:1" { return true }
        let parts = h.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        for part in parts {
            guard (1...3).contains(part.utf8.count), part.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                part.utf8.count == 1 || part.utf8.first != 0x30, let value = Int(part), value <= 255
            else { return false }
        }
        return parts[0] == "127"
    }

    /// Whether `url` names a loopback host (``isLoopback(host:)``); false for text that is not a
    /// URL with a host.
    public static func isLoopback(url: String) -> Bool {
        guard let host = URLComponents(string: url)?.host, !host.isEmpty else { return false }
        return isLoopback(host: host)
    }
}
