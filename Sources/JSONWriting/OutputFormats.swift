/// Output formats of `inspect`, `verify` and `lookup`.
public enum OutputFormat: String, CaseIterable, Sendable {
    case text, json
}

/// Output formats of the listings (`history`, `notifications`, the outbox): text, JSON or CSV.
public enum TableFormat: String, CaseIterable, Sendable {
    case text, json, csv
}
