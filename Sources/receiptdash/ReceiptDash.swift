import ArgumentParser
import CProcessLimits
import UntrustedText

@main
struct ReceiptDash: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receiptdash",
        abstract: "Decode, verify and explain Apple App Store receipts.",
        discussion: """
            Reads PKCS#7 app receipts (binary or base64), iOS 6 transaction receipts, saved \
            verifyReceipt responses, V1 notifications and StoreKit 2 JWS (transactions, renewal \
            info, AppTransaction, V2 notifications). Formats are sniffed automatically.
            """,
        version: BuildInfo.versionLine,
        subcommands: [Dash.self, Inspect.self, Lookup.self, CustomerCommand.self, DoctorCommand.self, Notifications.self, Verify.self, Watch.self, History.self, Receive.self, Extend.self, Consumption.self, AppAccountToken.self, Finish.self, TestNotification.self, OfferSignatureCommand.self, DatabaseCommand.self, Simulator.self, Bench.self, Keys.self],
        defaultSubcommand: Dash.self
    )

    /// `--version` alone is answered before the argument parser builds its command tree: that
    /// tree's first dynamic casts scan every protocol conformance of the static binary (about
    /// 55 million instructions, most of the command's 17 ms). Everything else goes to the
    /// parser's own `main`.
    ///
    /// `inspect` with arguments, the command QA runs over folders, is parsed as a command of its
    /// own: the whole tree's parse made the dynamic casts of the root and of every
    /// subcommand's help names first. Anything that parse does not accept as it is (help, an
    /// unknown option, a failed validation) goes to the parser's own `main`, which answers
    /// it with the root's usage as always; an error from the run is reported as `main`
    /// reports it. Meanwhile the bundled Apple roots, which every inspected signature is
    /// judged against, are read on the other core.
    static func main() async {
        // No core file: a crash must not leave an In-App Purchase key, a shared secret or a
        // customer's data on disk.
        _ = rd_disable_core_dumps()
        let arguments = CommandLine.arguments
        if arguments.count == 2, arguments[1] == "--version" {
            Console.standard.line(BuildInfo.versionLine)
            return
        }
        if arguments.count > 2, arguments[1] == "inspect" {
            let roots = Task.detached(priority: .userInitiated) { Inspect.readBundledRoots() }
            let inspect = try? Inspect.parseAsRoot(Array(arguments.dropFirst(2))) as? Inspect
            // Awaited either way: no task outlives the choice.
            await roots.value
            if let inspect {
                do {
                    try await inspect.run()
                } catch {
                    exit(withError: error)
                }
                return
            }
        }
        await main(nil)
    }
}
