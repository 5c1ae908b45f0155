import ArgumentParser

/// `--root-ca`: test roots trusted beside Apple's (the simulator's, Xcode's).
public struct RootCAOption: ParsableArguments {
    public init() {}

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A root certificate (DER or PEM) to trust for test data (repeatable), e.g. the simulator's (--api-root-out). Chains to it are judged test, never valid.",
            valueName: "file"))
    public var rootCa: [String] = []
}
