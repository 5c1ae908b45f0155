import ArgumentParser

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
        version: "0.1.0",
        subcommands: [Dash.self, Inspect.self, Lookup.self, DoctorCommand.self, Notifications.self, Verify.self, Watch.self, History.self, Receive.self, Extend.self, Consumption.self, AppAccountToken.self, Finish.self, TestNotification.self, DatabaseCommand.self, Simulator.self, Bench.self, Keys.self],
        defaultSubcommand: Dash.self
    )
}
