import ArgumentParser
import AuditStore
import AuditTrail
import Foundation

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
            abstract: "Create or upgrade the audit tables (versioned migrations; running it again changes nothing).")

        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let store = try await database.open()
            print("receiptdash: \(Self.report(store))")
            await store.close()
        }

        /// What the open did: `created X at schema v6`, `migrated X from v3 to v6`, or `X is at
        /// the current schema (v6)`.
        static func report(_ store: any AuditBackend) -> String {
            let (all, applied) = (store.schemaVersions, store.migrationsApplied)
            // The schema's versions are the shared v1, v2, …; PostgreSQL adds migrations of its
            // own (pg1-follow), which are applied with them but are not versions.
            func isVersion(_ name: String) -> Bool { name.hasPrefix("v") && name.dropFirst().allSatisfy(\.isNumber) }
            let versions = all.filter(isVersion)
            let current = versions.last ?? "?"
            if applied.isEmpty { return "\(store.location) is at the current schema (\(current))" }
            guard let first = applied.first(where: isVersion) else { return "updated \(store.location) at schema \(current)" }
            guard let index = versions.firstIndex(of: first), index > 0 else { return "created \(store.location) at schema \(current)" }
            return "migrated \(store.location) from \(versions[index - 1]) to \(current)"
        }
    }

    struct Copy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy a trail (receipts, sightings, attempts, purchases, look-ups, notifications) into another.",
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
                Standard.error("receiptdash: no such file: \(from)")
                throw ExitCode(66)
            }
            let source = try await AuditOpening.open(from, readOnly: true)
            let target = try await AuditOpening.open(to)
            defer {
                Task {
                    await source.close()
                    await target.close()
                }
            }
            guard let reader = source as? any AuditTransferring, let writer = target as? any AuditTransferring else {
                Standard.error("receiptdash: copying between these databases is not supported")
                throw ExitCode.failure
            }
            let interactive = isatty(STDERR_FILENO) != 0
            do {
                let counts = try await AuditCopy.run(from: reader, to: writer) { counts in
                    if interactive {
                        FileHandle.standardError.write(Data("\r\u{1B}[Kcopying: \(counts.receiptsAdded + counts.receiptsMerged) receipts".utf8))
                    }
                }
                if interactive { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
                print("receiptdash: copied \(source.location) into \(target.location): \(counts)")
            } catch {
                Standard.error("receiptdash: the copy stopped: \(AuditStores.words(error)) (what was copied stays; run it again to finish)")
                throw ExitCode.failure
            }
        }
    }
}
