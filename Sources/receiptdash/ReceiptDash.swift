import ArgumentParser
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
        subcommands: [Dash.self, Inspect.self, Lookup.self, DoctorCommand.self, Notifications.self, Verify.self, Watch.self, History.self, Receive.self, Extend.self, Consumption.self, AppAccountToken.self, Finish.self, TestNotification.self, DatabaseCommand.self, Simulator.self, Bench.self, Keys.self],
        defaultSubcommand: Dash.self
    )

    /// `--version` alone is answered before the argument parser builds its command tree: that
    /// tree's first dynamic casts scan every protocol conformance of the static binary (about
    /// 55 million instructions, most of the command's 17 ms). Everything else goes to the
    /// parser's own `main`.
    static func main() async {
        if CommandLine.arguments.count == 2, CommandLine.arguments[1] == "--version" {
            Standard.line(BuildInfo.versionLine)
            return
        }
        await main(nil)
    }
}
