import ArgumentParser

/// `--ca-file`: extra TLS roots, for every command whose outgoing TLS connections (Apple's
/// services, a receiver `doctor` checks) a corporate proxy may sit in front of.
struct TLSTrustOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Extra trusted TLS root certificates (PEM or DER), e.g. a corporate proxy's.", valueName: "file"))
    var caFile: String?
}
