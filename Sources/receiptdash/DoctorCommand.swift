import ArgumentParser
import AuditTrail
import CommandOptions
import Doctor
import Foundation
import AppStoreAPI
import JSONWriting
import ReceiptRendering
import ReceiptCore
import TerminalUI
import UntrustedText

struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check a set-up and say what to fix: API key, clock, audit trail, shared secret, receiver, terminal.",
        discussion: """
            One line per check: ✓ as it should be, ✗ wrong (with what to do under it), – not \
            checked (not set up, or not asked for). Nothing is created, migrated or changed; the \
            only requests are one look-up of a made-up transaction id per environment (any answer \
            but 401 means the key is accepted) and, with --receiver, a TLS handshake and GET /health.

            Checks: the API credentials as lookup reads them (flags, --api-profile, environment): \
            the key parses, its file is readable by its owner only, a token is minted, production \
            and sandbox accept it; this machine's clock against the servers' Date header; the \
            audit trail (--db or the default file): opens, at the current schema, writable, mode; \
            the shared secret (--shared-secret-file or RECEIPTDASH_SHARED_SECRET); the receiver \
            (--receiver URL): answers, its certificate is trusted and valid for 30 more days, \
            /health says its store is writable; the terminal: colours, UTF-8, size.

            Exit status: 0 nothing wrong; 1 something to fix (✗); 64 usage.

            Examples:
              receiptdash doctor
              receiptdash doctor --api-profile prod --receiver https://hooks.example.com/notifications
              receiptdash doctor --format json
            """
    )

    @Option(name: .long, help: "Output format: text or json.")
    var format: OutputFormat = .text

    @Option(name: .long, help: ArgumentHelp("The audit trail to check: a path or a postgres:// URL (default: the default file).", valueName: "path|url"))
    var db: String?

    @Option(name: .long, help: ArgumentHelp("The shared secret's file to check (or RECEIPTDASH_SHARED_SECRET).", valueName: "file"))
    var sharedSecretFile: String?

    @Option(name: .long, help: ArgumentHelp("A notification receiver's URL to check (https; http on loopback only).", valueName: "url"))
    var receiver: String?

    @OptionGroup var tls: TLSTrustOptions

    @OptionGroup(title: "App Store Server API")
    var api: APIOptions

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        // A profile that cannot be read is a failed check with its fix, not a usage error.
        var setup = APISetup(flags: APICredentials.Flags(), environment: environment, hosts: .apple)
        do throws(APICredentialError) {
            _ = try api.loadProfile()
        } catch {
            setup.profileError = error
        }
        if setup.profileError == nil { setup = APISetup(flags: try api.credentialFlags(), environment: environment, hosts: try api.hosts()) }
        let doctor = Doctor(
            api: setup,
            database: db, sharedSecretFile: sharedSecretFile, receiverURL: receiver, caFile: tls.caFile, environment: environment,
            openStore: { database throws(AuditDatabaseError) in try await AuditStores.open(database, readOnly: true) })
        let report = await doctor.run()
        let colour = isatty(STDOUT_FILENO) == 1 && Theme.coloursAllowed(environment)
        Console.standard.output(format == .json ? report.json() : report.text(colour: colour))
        if !report.healthy { throw ExitCode.failure }
    }
}
