import ArgumentParser
import OutboundHTTP
import UntrustedText

/// `--ca-file`: extra TLS roots, for every command whose outgoing TLS connections (Apple's
/// services, a receiver `doctor` checks, forwarding targets, the simulator's receiver) a
/// corporate proxy or a private CA may sit in front of. Roots are added; checks are never off.
public struct TLSTrustOptions: ParsableArguments {
    public init() {}

    @Option(name: .long, help: ArgumentHelp("Extra trusted TLS root certificates (PEM or DER), e.g. a corporate proxy's.", valueName: "file"))
    public var caFile: String?

    /// The certificates of `--ca-file`, none without it; a file that cannot be used is said on
    /// standard error and ends the command as a setting that cannot be used (exit 64).
    public func roots() throws -> TrustRoots {
        guard let caFile else { return [] }
        do {
            return try OutboundHTTPClient.loadTrustRoots(file: caFile)
        } catch {
            Console.standard.error("receiptdash: \(error.reason)")
            throw ExitStatus.usage
        }
    }
}
