import ArgumentParser

/// TEMPORARY: `receiptdash messaging`, holding only `performance-test` until helper A's
/// `messaging` command (Sources/receiptdash/MessagingCommand*.swift) lands. The integrator
/// deletes this file and adds `MessagingPerformanceTest.self` to A's subcommands.
struct Messaging: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "messaging",
        abstract: "Apple's Retention Messaging API: the performance test of your realtime URL.",
        subcommands: [MessagingPerformanceTest.self])
}
