import UntrustedText

/// A command that could not do what it was asked: `{"error": {"code", "message"}}` on standard
/// output for JSON, or `receiptdash: message` on standard error for text.
public enum ErrorOutput {
    public static func object(code: String, message: String, into out: inout JSONOutput) {
        out.beginObject()
        out.key("error")
        out.beginObject()
        out.member("code", code)
        out.member("message", message)
        out.endObject()
        out.endObject()
    }

    public static func write(code: String, message: String, format: OutputFormat, to console: Console) {
        switch format {
        case .json:
            var out = JSONOutput(flushingTo: console)
            object(code: code, message: message, into: &out)
            out.newline()
            out.flush()
        case .text:
            console.error("receiptdash: \(message)")
        }
    }
}
