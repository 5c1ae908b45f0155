import ArgumentParser
import AuditTrail
import CommandOptions
import Foundation
import UntrustedText

/// `receiptdash db`: set up a team's audit database and move a trail into it.
struct DatabaseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "Set up an audit database (migrate) and move an existing trail into it (copy).",
        discussion: """
            A team shares one trail on PostgreSQL: --db postgres://USER@HOST:PORT/DATABASE wherever \
            --db is taken (the password from PGPASSWORD or ~/.pgpass; never from argv if you can \
            help it, since every user of the machine sees the command line). SQLite stays the \
            default for one person.

            Examples:
              receiptdash db migrate --db postgres://receiptdash@db.internal:5432/audit?sslmode=verify-full
              receiptdash db copy --from ~/.local/share/receiptdash/audit.sqlite --to postgres://receiptdash@db.internal/audit
            """,
        subcommands: [Migrate.self, Copy.self])

    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "migrate",
            abstract: "Create or upgrade the audit tables (versioned migrations; running it again changes nothing).")

        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let store = try await database.open()
            print("receiptdash: \(store.openingReport)")
            await store.close()
        }
    }

    struct Copy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "copy",
            abstract: "Copy a trail (receipts, sightings, attempts, purchases, look-ups, notifications, actions sent to Apple) into another.",
            discussion: """
                Receipts are matched by content hash, sightings and attempts by their time and \
                source, notifications by notificationUUID: running the copy twice adds nothing the \
                second time, and a receipt the target already has gains only what it lacked.
                """)

        @Option(name: .long, help: ArgumentHelp("The trail to copy from (a SQLite path or postgres:// URL).", valueName: "path|url"))
        var from: String

        @Option(name: .long, help: ArgumentHelp("The trail to copy into (created and migrated when needed).", valueName: "path|url"))
        var to: String

        func validate() throws {
            let source = try AuditOpening.parse(from)
            let target = try AuditOpening.parse(to)
            if source == target { throw ValidationError("--from and --to name the same database.") }
        }

        func run() async throws {
            if !AuditDatabase.isPostgres(from), !FileManager.default.fileExists(atPath: from) {
                // Said plainly, without the usage text (the command was typed right); 66 is
                // EX_NOINPUT.
                Console.standard.error("receiptdash: no such file: \(from)")
                throw ExitStatus.noInput
            }
            let source = try await AuditOpening.open(from, readOnly: true)
            let target: any AuditBackend
            do {
                target = try await AuditOpening.open(to)
            } catch {
                await source.close()
                throw error
            }
            // Both closed, awaited, however the copy ends.
            let copied = try await AuditStoreService.closing(source) {
                try await AuditStoreService.closing(target) { await AuditCopy.run(from: source, to: target, words: AuditStores.words, console: .standard) }
            }
            if !copied { throw ExitCode.failure }
        }
    }
}
