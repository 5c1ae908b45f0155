import Foundation
import NotificationReceiver
import ServiceTestSupport
import Testing
import TestSupport

/// Every machine-readable output parses, whatever it was given: `inspect` (with and without
/// `--summary`), `verify`, `customer`, `notifications` and `history`, with each `--format` they
/// take, over no input (an empty folder, an empty trail), one, several, a folder and a failing
/// input. JSON is one document, CSV a header and rows of its column count (`--follow`'s JSON
/// lines are parsed in `NotificationsCommandTests`).
@Suite(.timeLimit(.minutes(3))) struct EveryOutputParsesTests {
    let cli = InspectCommandTests()

    /// The input sets a command that reads files is given, by name.
    func inputSets() throws -> [(name: String, paths: [String])] {
        let empty = TemporaryFolder("empty").url
        let folder = InspectCommandTests.packageRoot.appendingPathComponent("Sources/ReceiptDemo/Demo").path
        let broken = TemporaryFolder("broken").appending("broken.b64")
        // A receipt cut short: base64 that is not a whole receipt.
        try Data(try String(contentsOfFile: cli.fixture("production.b64"), encoding: .utf8).prefix(601).utf8).write(to: broken)
        return [
            ("no input", [empty.path]),
            ("one", [cli.fixture("production.b64")]),
            ("several", [cli.fixture("production.b64"), cli.fixture("sandbox-2023.der"), cli.fixture("notification-v2.jws")]),
            ("a folder", [folder]),
            ("a failing input", [broken.path]),
            ("a failing input among others", [cli.fixture("production.b64"), broken.path]),
        ]
    }

    @Test func inspectWritesParsableOutputForEveryInputSet() async throws {
        #expect(try await cli.run(["inspect", "--format", "json"]).stdout == "")
        for (name, paths) in try inputSets() {
            let json = try await cli.run(["inspect", "--format", "json", "--at", "2026-01-01"] + paths)
            #expect(json.status == (name.contains("failing") ? 1 : 0), "\(name): \(json.stderr)")
            let document = try Self.parsesAsJSON(json.stdout, "inspect --format json over \(name)")
            // One input: its object; otherwise an array of one element per input.
            if paths.count == 1 && !name.contains("folder") && name != "no input" {
                #expect(document is [String: Any], "\(name)")
            } else {
                #expect(document is [Any], "\(name)")
            }

            let summary = try await cli.run(["inspect", "--summary", "--format", "json", "--at", "2026-01-01"] + paths)
            let rows = try #require(try Self.parsesAsJSON(summary.stdout, "inspect --summary --format json over \(name)") as? [[String: Any]])
            let csv = try await cli.run(["inspect", "--summary", "--format", "csv", "--at", "2026-01-01"] + paths)
            let table = try Self.parsesAsCSV(csv.stdout, "inspect --summary --format csv over \(name)")
            #expect(table.header.first == "file")
            // The same receipts in both formats, in the same order.
            #expect(table.rows.map { $0.first } == rows.map { $0["file"] as? String }, "\(name)")
            #expect(summary.status == csv.status)
        }
        // Several inputs: one summary row each, whatever their count.
        let several = try await cli.run(["inspect", "--summary", "--format", "json", cli.fixture("production.b64"), cli.fixture("sandbox-2023.der")])
        #expect((try Self.parsesAsJSON(several.stdout, "two inputs") as? [Any])?.count == 2)
    }

    @Test func verifyWritesParsableJSONAndFillsATrailHistoryAndCustomerRead() async throws {
        let scratch = TemporaryFolder("outputs")
        defer { scratch.remove() }
        let secret = scratch.appending("secret")
        try Data("0123456789abcdef0123456789abcdef\n".utf8).write(to: secret)
        let (simulator, production, sandbox) = try VerifyCommandTests().startSimulator(secretFile: secret.path)
        defer { simulator.terminate() }
        let db = scratch.appending("outputs.sqlite").path
        let empty = try await Self.emptyTrail()

        // history on a trail with nothing yet, in each format.
        for format in ["json", "csv"] {
            let run = try await cli.run(["history", "--db", empty, "--format", format])
            #expect(run.status == 0, "\(run.stderr)")
            try Self.parses(run.stdout, format: format, "history --format \(format) on an empty trail")
        }

        for (name, paths) in try inputSets() {
            let run = try await cli.run([
                "verify", "--format", "json", "--shared-secret-file", secret.path, "--production-url", production, "--sandbox-url", sandbox,
                "--db", db,
            ] + paths)
            let document = try Self.parsesAsJSON(run.stdout, "verify --format json over \(name)")
            #expect(document is [Any] || document is [String: Any], "\(name)")
        }

        for format in ["json", "csv"] {
            let history = try await cli.run(["history", "--db", db, "--format", format])
            #expect(history.status == 0, "\(history.stderr)")
            try Self.parses(history.stdout, format: format, "history --format \(format)")
            let actions = try await cli.run(["history", "--actions", "--db", db, "--format", format])
            try Self.parses(actions.stdout, format: format, "history --actions --format \(format)")
        }
        let rows = try await #require(try Self.parsesAsJSON(try cli.run(["history", "--db", db, "--format", "json"]).stdout, "history") as? [Any])
        #expect(rows.count >= 2)

        // customer, offline, by a transaction of production.b64 the trail holds and by one it
        // does not (an error object in JSON, nothing in CSV).
        for (id, found) in [("340001237736590", true), ("9999999999999999", false)] {
            for format in ["json", "csv"] {
                let run = try await cli.run(["customer", "--offline", "--transaction-id", id, "--db", db, "--format", format])
                try Self.customerOutput(run, format: format, found: found, "customer --format \(format) by \(id)")
            }
        }
    }

    @Test func notificationsWritesParsableOutputOnEmptyAndFilledTrails() async throws {
        let filled = try await NotificationsCommandTests().database()
        let empty = try await Self.emptyTrail()
        for (name, db) in [("an empty trail", empty), ("a trail of two", filled)] {
            for format in ["json", "csv"] {
                let list = try await cli.run(["notifications", "--db", db, "--format", format])
                #expect(list.status == 0, "\(name): \(list.stderr)")
                try Self.parses(list.stdout, format: format, "notifications --format \(format) on \(name)")
            }
            let outbox = try await cli.run(["notifications", "--db", db, "--outbox", "--format", "json"])
            try Self.parses(outbox.stdout, format: "json", "notifications --outbox on \(name)")
            let refusals = try await cli.run(["notifications", "--db", db, "--refusals", "--format", "json"])
            try Self.parses(refusals.stdout, format: "json", "notifications --refusals on \(name)")
            for format in ["json", "csv"] {
                let customer = try await cli.run(["customer", "--offline", "--original-transaction-id", "2000000900000001", "--db", db, "--format", format])
                try Self.customerOutput(customer, format: format, found: db == filled, "customer --format \(format) on \(name)")
            }
        }
        let rows = try await #require(
            try Self.parsesAsJSON(try cli.run(["notifications", "--db", filled, "--format", "json"]).stdout, "notifications") as? [Any])
        #expect(rows.count == 2)

        // --follow --format jsonl is parsed line by line in
        // NotificationsCommandTests.followStreamsJSONLinesAsTheyAreStored.
    }

    /// A trail with its tables and no row (a missing file is an error of its own, named).
    static func emptyTrail() async throws -> String {
        let path = TemporaryFolder("empty-trail").appending("audit.sqlite").path
        await (try NotificationStore(path: path).started()).close()
        return path
    }

    /// A customer found: its story parses (exit 0). Not found: exit 1, and in JSON an error
    /// object by code, in CSV nothing.
    static func customerOutput(_ run: CLIRunner.Run, format: String, found: Bool, _ what: String) throws {
        #expect(run.status == (found ? 0 : 1), "\(what): \(run.stderr)")
        if found || format == "json" { try parses(run.stdout, format: format, what) }
        if !found && format == "json" {
            let error = (try parsesAsJSON(run.stdout, what) as? [String: Any])?["error"] as? [String: Any]
            #expect(error?["code"] as? String == "not-found", "\(what)")
        }
        if !found && format == "csv" { #expect(run.stdout == "", "\(what)") }
    }

    // MARK: - Parsers

    static func parses(_ text: String, format: String, _ what: String) throws {
        switch format {
        case "json": _ = try parsesAsJSON(text, what)
        case "csv": _ = try parsesAsCSV(text, what)
        default: Issue.record("no parser for \(format)")
        }
    }

    /// One JSON document, an object or an array.
    @discardableResult
    static func parsesAsJSON(_ text: String, _ what: String) throws -> Any {
        do {
            let value = try JSONSerialization.jsonObject(with: Data(text.utf8))
            #expect(value is [Any] || value is [String: Any], "\(what): not an object or an array")
            return value
        } catch {
            Issue.record("\(what): not JSON (\(error)): \(text.prefix(300))")
            throw error
        }
    }

    struct CSVTable {
        var header: [String]
        var rows: [[String]]
    }

    /// RFC 4180: a header and rows, each with the header's count of fields; quoted fields may
    /// hold commas, quotes (doubled) and line breaks.
    static func parsesAsCSV(_ text: String, _ what: String) throws -> CSVTable {
        var records: [[String]] = []
        var field = ""
        var record: [String] = []
        var quoted = false
        var chars = Array(text)[...]
        while let c = chars.popFirst() {
            if quoted {
                if c == "\"" {
                    if chars.first == "\"" {
                        field.append("\"")
                        chars = chars.dropFirst()
                    } else {
                        quoted = false
                    }
                } else {
                    field.append(c)
                }
                continue
            }
            switch c {
            case "\"" where field.isEmpty: quoted = true
            case ",":
                record.append(field)
                field = ""
            case "\n", "\r\n":
                record.append(field)
                records.append(record)
                (record, field) = ([], "")
            default: field.append(c)
            }
        }
        #expect(!quoted, "\(what): a quoted field never ends")
        if !field.isEmpty || !record.isEmpty {
            record.append(field)
            records.append(record)
        }
        guard let header = records.first, !header.isEmpty, header != [""] else {
            Issue.record("\(what): no header: \(text.prefix(300))")
            throw CSVError()
        }
        let rows = Array(records.dropFirst())
        for (index, row) in rows.enumerated() where row.count != header.count {
            Issue.record("\(what): row \(index + 1) has \(row.count) fields, the header \(header.count)")
        }
        return CSVTable(header: header, rows: rows)
    }

    struct CSVError: Error {}
}
