import UntrustedText

extension Standard {
    /// `receiptdash: warning: …` on standard error (escaped: a warning may name a path).
    @Sendable static func warning(_ warning: String) {
        error("receiptdash: warning: " + warning)
    }
}
