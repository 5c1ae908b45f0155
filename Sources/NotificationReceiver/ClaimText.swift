/// Bounds on text a client wrote and nobody verified: the claims of a token read before (or
/// without) its signature being trusted (`bundleId`, `environment`, `notificationUUID`,
/// `notificationType`, `subtype`), and the refusal reasons that quote them. Each is cut here,
/// before it is escaped or put into a reason, so a 750 KB `bundleId` costs neither a 750 KB
/// log line nor a 750 KB refusal row (nor the escaping of either).
enum ClaimText {
    /// The most UTF-8 bytes of one unverified claim kept, the cut mark included.
    static let maximumClaimBytes = 256
    /// The most UTF-8 bytes of a refusal's reason (its log line and its refusal row), the cut
    /// mark included.
    static let maximumReasonBytes = 1024
    /// What ends a cut text.
    static let cutMark = "…"

    /// `text` when it is at most `limit` UTF-8 bytes; else its longest prefix of whole Unicode
    /// scalars that fits in `limit` bytes with ``cutMark`` after it, and the mark.
    static func cut(_ text: String, to limit: Int = maximumClaimBytes) -> String {
        guard text.utf8.count > limit else { return text }
        let room = max(0, limit - cutMark.utf8.count)
        let scalars = text.unicodeScalars
        var end = scalars.startIndex
        var bytes = 0
        while end != scalars.endIndex {
            let width = UTF8.width(scalars[end])
            if bytes + width > room { break }
            bytes += width
            end = scalars.index(after: end)
        }
        return String(scalars[..<end]) + cutMark
    }

    /// ``cut(_:to:)`` of a claim that may be absent.
    static func cut(_ text: String?) -> String? {
        text.map { cut($0) }
    }
}
