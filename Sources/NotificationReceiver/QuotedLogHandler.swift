import Logging

/// A log handler whose metadata values can't pass for fields: a value holding a space, `=` or
/// `"` (or empty) is written in double quotes, its quotes and backslashes escaped with a
/// backslash, before `inner` (the command's stream handler) writes `key=value`. A claim such
/// as `x refusal=none` is then `reason="x refusal=none"`, one field, whatever the client wrote.
///
/// Values are otherwise as they were: what is untrusted is escaped by `SafeText` first; this
/// only keeps the fields apart.
public struct QuotedLogHandler: LogHandler {
    /// The handler that writes the line.
    private var inner: any LogHandler

    public init(_ inner: any LogHandler) {
        self.inner = inner
    }

    public var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue.mapValues(Self.quoted) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue.map(Self.quoted) }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    public func log(event: LogEvent) {
        var event = event
        var metadata = event.metadata ?? [:]
        // An error's words are as untrusted as any value: quoted here, not added unquoted by `inner`.
        if let error = event.error {
            metadata["error.message"] = "\(error)"
            metadata["error.type"] = "\(String(reflecting: type(of: error)))"
            event.error = nil
        }
        if let provided = inner.metadataProvider?.get(), !provided.isEmpty {
            metadata.merge(provided) { explicit, _ in explicit }
        }
        event.metadata = metadata.isEmpty ? nil : metadata.mapValues(Self.quoted)
        inner.log(event: event)
    }

    /// A value as one field: as a string, quoted when it needs to be.
    static func quoted(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        .string(quoted(value.description))
    }

    /// `text` as it is when it holds no space, `=` or `"` and is not empty; else in double
    /// quotes, with `"` and `\` escaped.
    static func quoted(_ text: String) -> String {
        guard text.isEmpty || text.utf8.contains(where: { $0 == 0x20 || $0 == 0x3D || $0 == 0x22 }) else { return text }
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            if scalar == "\"" || scalar == "\\" { out.unicodeScalars.append("\\") }
            out.unicodeScalars.append(scalar)
        }
        return out + "\""
    }
}
