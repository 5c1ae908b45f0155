import ArgumentParser
import CommandOptions
import CProcessLimits
import Foundation
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
        subcommands: [Dash.self, Inspect.self, Lookup.self, CustomerCommand.self, DoctorCommand.self, Notifications.self, Verify.self, Watch.self, History.self, Receive.self, Extend.self, Consumption.self, AppAccountToken.self, Finish.self, TestNotification.self, Messaging.self, PolicyCommand.self, OfferSignatureCommand.self, DatabaseCommand.self, Simulator.self, Bench.self, Keys.self],
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
    /// unknown option, a failed validation) goes to the whole tree's parse, which answers
    /// it with the root's usage as always; an error from the run is reported as every
    /// command's is (``failed(_:)``). Meanwhile the bundled Apple roots, which every inspected signature is
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
                    failed(error)
                }
                return
            }
        }
        // A mistyped command is a usage error, not a file the dashboard cannot read.
        if arguments.count > 1 {
            let commands = configuration.subcommands.compactMap { $0.configuration.commandName }
            if let problem = UnknownCommand.problem(arguments[1], commands: commands, exists: { FileManager.default.fileExists(atPath: $0) }) {
                Console.standard.error("receiptdash: \(problem)")
                exit(withError: ExitStatus.usage)
            }
        }
        let command: any ParsableCommand
        do {
            command = try parseAsRoot(nil)
        } catch {
            exit(withError: error)
        }
        do {
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                var command = command
                try command.run()
            }
        } catch {
            failed(error)
        }
    }

    /// Ends the process for an error a parsed command threw, as the parser's own `main` does,
    /// with one difference: a value found unusable once the command runs (a secret file, a
    /// profile) is said in a line of its own, `receiptdash: …` and exit 64, not over the
    /// top-level usage of every subcommand (the command line was typed right; a setting is
    /// wrong).
    private static func failed(_ error: any Error) -> Never {
        if let error = error as? ValidationError {
            Console.standard.error("receiptdash: \(error.message)")
            exit(withError: ExitStatus.usage)
        }
        exit(withError: error)
    }
}
