/// The code of a ``CodedError``: an enum whose raw values are the stable names printed in
/// messages and JSON and stored in the audit database. Its `description` is that name.
public protocol CodedErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible where RawValue == String {}

extension CodedErrorCode {
    /// The stable name (`unauthorized`, `invalid location`, …).
    public var description: String { rawValue }

    /// The code of a stored name; nil for names this version does not know.
    public init?(storedName: String) { self.init(rawValue: storedName) }
}

/// An error with a ``code`` that programs and tests compare and a ``reason`` in words for
/// people, composed where the error is thrown. Modelled on swift-certificates'
/// `CertificateError`: equality and hashing use only the code, so the wording can improve
/// without breaking anyone; the description is the reason unless a type says otherwise.
public protocol CodedError: Error, Sendable, Hashable, CustomStringConvertible {
    associatedtype Code: CodedErrorCode
    var code: Code { get }
    /// A sentence in plain words saying what went wrong.
    var reason: String { get }
}

extension CodedError {
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { reason }
}
