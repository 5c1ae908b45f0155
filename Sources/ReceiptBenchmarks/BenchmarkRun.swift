import AppStoreClients
import AuditTrail
import AuditTrailSQLite
import Dashboard
import Foundation
import AppStoreAPI
import LocalFiles
import ReceiptDemo
import ReceiptCore
import ReceiptSimulator
import ReceiptTrust
import ReceiptWatch
import RetryEngine

/// A benchmark that could not run (no receipts, a wrong answer), in words.
public struct BenchmarkError: CodedError {
    public enum Code: String, CodedErrorCode, CaseIterable {
        /// Nothing in the inputs could be benchmarked.
        case noInputs = "no-inputs"
        /// A verification gave another verdict than the benchmark needs (its figure would lie).
        case unexpectedVerdict = "unexpected-verdict"
        /// The inputs carry no signature the bare verify can time.
        case noSignature = "no-signature"
        /// The simulator a benchmark runs against did not answer as it should.
        case simulatorFailed = "simulator-failed"
        /// The OCSP cache was not warm when the warm run began.
        case cacheNotWarm = "cache-not-warm"
        /// The store `--customer-db` names cannot time its bare queries (no query probe).
        case unmeasurableStore = "unmeasurable-store"
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// What `receiptdash bench` measures, with the command's settings: each benchmark prints its
/// figures through ``print`` (one line each).
public struct BenchmarkRun: Sendable {
    /// How long to measure, in seconds.
    public var seconds: Double
    /// Only files whose name ends with one of these.
    public var suffix: [String]
    /// Decode + signature + chain, not decode alone.
    public var verify: Bool
    /// Receipt files or folders.
    public var paths: [String]
    /// Concurrency of the online benchmark.
    public var concurrency: Int
    /// Validations per second streaming in while frames render.
    public var streamRate: Int
    /// Where result lines go.
    public var print: @Sendable (String) -> Void
    /// Opens an audit database by its `--db` value (the command says failures in words).
    public var openStore: @Sendable (String) async throws -> any AuditBackend

    public init(
        seconds: Double, suffix: [String], verify: Bool, paths: [String], concurrency: Int, streamRate: Int,
        print: @escaping @Sendable (String) -> Void, openStore: @escaping @Sendable (String) async throws -> any AuditBackend
    ) {
        self.seconds = seconds
        self.suffix = suffix
        self.verify = verify
        self.paths = paths
        self.concurrency = concurrency
        self.streamRate = streamRate
        self.print = print
        self.openStore = openStore
    }

    /// Receipts decoded (or, with ``verify``, decoded and judged) over and over on one thread;
    /// genuine JWS alone get the signature-rate benchmark beside the bare ES256 verify.
    public func benchDecode() async throws {
        let decoder = ReceiptDecoder()
        var chosen = paths
        let defaultFolder = suffix == [".jws"] ? "../shared/corpus/jws" : "../shared/corpus/pkcs7"
        if chosen.isEmpty, FileManager.default.fileExists(atPath: defaultFolder) {
            chosen = [defaultFolder]
        }
        var inputs: [(String, [UInt8])] = InputFiles.load(chosen, limit: decoder.limits.maximumInputBytes)
            .filter { input in suffix.contains { input.source.hasSuffix($0) } }
            .compactMap { input in (try? input.result.get()).map { (input.source, $0) } }
        if chosen.isEmpty { inputs = DemoCorpus.items().map { ($0.name, $0.bytes) } }
        let evaluator = TrustEvaluator()
        // The instant is fixed so the run does the same work whatever the date.
        let options = TrustOptions(now: Date(timeIntervalSince1970: 1_800_000_000))
        var decodable: [(String, [UInt8])] = []
        var tokens: [DecodedInput] = []
        for input in inputs {
            guard let decoded = try? decoder.decode(input.1) else { continue }
            if verify, await evaluator.evaluate(decoded, options: options).verdict != .valid { continue }
            decodable.append(input)
            if case .jws = decoded.signature { tokens.append(decoded) }
        }
        guard !decodable.isEmpty else { throw BenchmarkError(.noInputs, "No decodable receipts found.") }
        if verify, tokens.count == decodable.count {
            return try await benchJWS(decodable, tokens: tokens, skipped: inputs.count - decodable.count)
        }
        let bytes = decodable.reduce(0) { $0 + $1.1.count }
        let skipped = inputs.count - decodable.count
        print(
            "\(verify ? "verify (decode + signature + chain)" : "decode") benchmark: \(decodable.count) receipts "
                + "(\(skipped) skipped as \(verify ? "not genuine or undecodable" : "undecodable")), \(bytes) bytes per round")
        // Warm up, then measure whole rounds until the time is up.
        for (_, data) in decodable { _ = try? decoder.decode(data) }
        var decoded = 0
        var purchases = 0
        var valid = 0
        let start = DispatchTime.now().uptimeNanoseconds
        var elapsed: Double = 0
        repeat {
            for (_, data) in decodable {
                if let result = try? decoder.decode(data) {
                    purchases &+= result.allPurchases.count
                    if verify, await evaluator.evaluate(result, options: options).verdict == .valid { valid += 1 }
                }
                decoded += 1
            }
            elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        } while elapsed < seconds
        if verify && valid != decoded { throw BenchmarkError(.unexpectedVerdict, "\(decoded - valid) verifications did not give 'valid'.") }
        let rate = Double(decoded) / elapsed
        print(String(format: verify ? "verified %d receipts in %.2f s: %.0f receipts/s, %.1f MB/s, %.1f µs per receipt (one thread)" : "decoded %d receipts in %.2f s: %.0f receipts/s, %.1f MB/s, %.1f µs per receipt (one thread)",
            decoded, elapsed, rate, Double(bytes) * Double(decoded / decodable.count) / elapsed / 1e6, 1e6 / rate))
        _ = purchases
    }

    /// Genuine JWS (notifications with their nested tokens, transactions, renewal info) decoded
    /// and verified over and over on one thread, counting every signature checked. Beside it, in
    /// the same run, the bare swift-crypto ES256 verify (key and signature made beforehand) of
    /// the same signatures, each over its own signing input, so the hashing of long inputs
    /// counts on both sides; and, as the earlier figure, the bare verify of one token over and
    /// over. The three are measured in turns, eight slices each.
    /// - Parameters: `evaluator`, `options` and `expected` judge the tokens (the online-checks
    ///   benchmark's are the simulator's, with OCSP); `label` names what is verified.
    public func benchJWS(
        _ inputs: [(String, [UInt8])], tokens: [DecodedInput], skipped: Int, evaluator: TrustEvaluator = TrustEvaluator(),
        options: TrustOptions = TrustOptions(now: Date(timeIntervalSince1970: 1_800_000_000)),
        expected: TrustReport.Verdict = .valid, label: String = "decode + signature + chain"
    ) async throws {
        let decoder = ReceiptDecoder()
        func signatures(_ input: DecodedInput) -> Int {
            var count = 0
            if case .jws = input.signature { count = 1 }
            return input.nested.reduce(count) { $0 + signatures($1.input) }
        }
        /// Every signature of `input`, nested tokens included, ready for the bare verify.
        func probes(_ input: DecodedInput) -> [ES256Probe] {
            var found: [ES256Probe] = []
            if case .jws(let token) = input.signature, let probe = ES256Probe(token) { found.append(probe) }
            return input.nested.reduce(into: found) { $0 += probes($1.input) }
        }
        let perRound = tokens.reduce(0) { $0 + signatures($1) }
        let bytes = inputs.reduce(0) { $0 + $1.1.count }
        let sameSignatures = tokens.flatMap(probes)
        guard case .jws(let sample) = tokens[0].signature, let probe = ES256Probe(sample), probe.verify() else {
            throw BenchmarkError(.noSignature, "\(inputs[0].0): no ES256 signature to time the bare verify with.")
        }
        guard sameSignatures.count == perRound, sameSignatures.allSatisfy({ $0.verify() }) else {
            throw BenchmarkError(
                .noSignature,
                "Of the \(perRound) signatures a round checks, \(sameSignatures.filter { $0.verify() }.count) are ES256 signatures "
                    + "with a P-256 leaf key that verify alone: the bare verify of the same signatures needs all of them. "
                    + "Benchmark genuine App Store tokens (the corpus's jws folder).")
        }
        print(
            "verify JWS (\(label)) benchmark: \(inputs.count) tokens (\(skipped) skipped as not genuine or undecodable), "
                + "\(perRound) signatures per round (nested tokens included), \(bytes) bytes per round")
        func bare(_ probes: [ES256Probe], _ seconds: Double) -> (count: Int, elapsed: Double) {
            var count = 0
            let start = DispatchTime.now().uptimeNanoseconds
            var elapsed: Double = 0
            repeat {
                for probe in probes where probe.verify() { count += 1 }
                elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            } while elapsed < seconds
            return (count, elapsed)
        }
        let oneToken = Array(repeating: probe, count: 64)
        // Warm up all three.
        _ = bare(oneToken, 0.1)
        _ = bare(sameSignatures, 0.1)
        for (_, data) in inputs {
            if let decoded = try? decoder.decode(data) { _ = await evaluator.evaluate(decoded, options: options) }
        }
        // Eight slices of each, in turn, so the machine's drift during the run falls alike on all three.
        var one = (count: 0, elapsed: 0.0)
        var same = (count: 0, elapsed: 0.0)
        var verified = 0
        var valid = 0
        var checked = 0
        var elapsed: Double = 0
        for _ in 0..<8 {
            let oneSlice = bare(oneToken, seconds / 16)
            one = (one.count + oneSlice.count, one.elapsed + oneSlice.elapsed)
            let sameSlice = bare(sameSignatures, seconds / 16)
            same = (same.count + sameSlice.count, same.elapsed + sameSlice.elapsed)
            let start = DispatchTime.now().uptimeNanoseconds
            var sliceElapsed: Double = 0
            repeat {
                for (_, data) in inputs {
                    if let decoded = try? decoder.decode(data),
                        await evaluator.evaluate(decoded, options: options).verdict == expected
                    {
                        valid += 1
                        checked += signatures(decoded)
                    }
                    verified += 1
                }
                sliceElapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            } while sliceElapsed < seconds / 8
            elapsed += sliceElapsed
        }
        if valid != verified { throw BenchmarkError(.unexpectedVerdict, "\(verified - valid) verifications did not give '\(expected.rawValue)'.") }
        let rate = Double(verified) / elapsed
        let signatureRate = Double(checked) / elapsed
        let sameRate = Double(same.count) / same.elapsed
        let oneRate = Double(one.count) / one.elapsed
        let averageInput = sameSignatures.reduce(0) { $0 + $1.signingInputBytes } / sameSignatures.count
        print(String(
            format: "verified %d JWS in %.2f s: %.0f JWS/s, %.0f signatures/s (%.2f per JWS), %.1f µs per signature (one thread)",
            verified, elapsed, rate, signatureRate, Double(checked) / Double(verified), 1e6 / signatureRate))
        print(String(
            format: "bare ECDSA P-256 verify of the same %d signatures (swift-crypto isValidSignature, each over its own signing input, %d bytes on average, same run): %.0f verifies/s, %.1f µs each (one thread)",
            sameSignatures.count, averageInput, sameRate, 1e6 / sameRate))
        print(String(
            format: "bare ECDSA P-256 verify of one token over and over (%d-byte signing input, same run): %.0f verifies/s, %.1f µs each (one thread)",
            probe.signingInputBytes, oneRate, 1e6 / oneRate))
        print(String(format: "signatures/s ÷ bare verifies/s of the same signatures: %.1f%%", 100 * signatureRate / sameRate))
        print(String(format: "signatures/s ÷ bare verifies/s of one token: %.1f%%", 100 * signatureRate / oneRate))
    }

    /// A synthetic response: `rows` monthly renewals spread over 50 subscriptions, shuffled as
    /// Apple leaves latest_receipt_info, with refunds and upgrades sprinkled in.
    public func benchAnalysis(rows: Int) throws {
        var generator = SystemRandomNumberGenerator()
        let start = Date(timeIntervalSince1970: 1_500_000_000)
        var input = DecodedInput(format: .verifyResponse)
        input.environment = .production
        for i in 0..<rows {
            var p = Purchase(source: .latestReceiptInfo)
            p.transactionID = String(1_000_000 + i)
            p.originalTransactionID = String(i % 50)
            p.productID = i % 7 == 0 ? "pro.yearly" : "pro.monthly"
            p.productType = .autoRenewable
            p.purchaseDate = start.addingTimeInterval(Double(i / 50) * 30 * 86_400)
            p.expiresDate = p.purchaseDate?.addingTimeInterval(30 * 86_400)
            if i % 97 == 0 { p.cancellationDate = p.purchaseDate?.addingTimeInterval(86_400); p.cancellationReason = 0 }
            if i % 89 == 0 { p.isUpgraded = true; p.cancellationDate = p.purchaseDate?.addingTimeInterval(3600) }
            input.latestReceiptInfo.append(p)
        }
        input.latestReceiptInfo.shuffle(using: &generator)
        let at = start.addingTimeInterval(Double(rows / 50) * 30 * 86_400 / 2)
        _ = PurchaseAnalysis.analyze([input], at: at)  // warm up
        var times: [Double] = []
        let begin = DispatchTime.now().uptimeNanoseconds
        repeat {
            let t0 = DispatchTime.now().uptimeNanoseconds
            let analysis = PurchaseAnalysis.analyze([input], at: at)
            times.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
            precondition(analysis.subscriptions.count == min(rows, 50))
        } while Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e9 < seconds
        times.sort()
        print(String(
            format: "analysis of %d purchase rows (50 subscriptions): median %.2f ms, best %.2f ms, worst %.2f ms over %d runs (one thread)",
            rows, times[times.count / 2], times[0], times[times.count - 1], times.count))
    }

    /// One receipt with `rows` purchases in the dashboard at 200×60, the Purchases pane focused
    /// and scrolled to the middle; times `DashboardView.render`.
    public func benchRender(rows: Int) async {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        var state = DashboardState(now: now)
        var input = DecodedInput(format: .verifyResponse)
        input.environment = .production
        for i in 0..<rows {
            var p = Purchase(source: .latestReceiptInfo)
            p.transactionID = String(1_000_000_000 + i)
            p.originalTransactionID = String(1_000_000_000 + i / 12)
            p.productID = "com.example.subscription.\(i % 3 == 0 ? "yearly" : "monthly")"
            p.productType = .autoRenewable
            p.purchaseDate = now.addingTimeInterval(-Double(rows - i) * 3600)
            p.expiresDate = p.purchaseDate?.addingTimeInterval(30 * 86_400)
            input.latestReceiptInfo.append(p)
        }
        let pipeline = ReceiptPipeline(at: now, trustOptions: TrustOptions(now: now))
        state.add(await pipeline.judge(source: "bench", decoded: input, bytes: []))
        _ = state.handle(.resize(width: 200, height: 60))
        _ = state.handle(.tab)
        for _ in 0..<(rows / 2 / max(1, state.pageSize)) { _ = state.handle(.pageDown) }
        // Live items for the stream: each validation finishes one of them (and feeds the metrics).
        for i in 0..<50 { state.add(await pipeline.judge(source: "live \(i)", bytes: Array(SyntheticReceipt.base64(i).utf8))) }
        let liveIDs = state.items.suffix(50).map(\.id)
        _ = DashboardView.render(state, width: 200, height: 60)  // warm up
        var times: [Double] = []
        var streamed = 0
        var clock = now
        let begin = DispatchTime.now().uptimeNanoseconds
        repeat {
            let t0 = DispatchTime.now().uptimeNanoseconds
            // One frame's worth of validations at `streamRate` per second and 60 frames per second.
            let perFrame = streamRate / 60 + (streamed % 60 < streamRate % 60 ? 1 : 0)
            clock = clock.addingTimeInterval(1.0 / 60)
            for _ in 0..<perFrame {
                let id = liveIDs[streamed % liveIDs.count]
                state.apply(.sending(itemID: id, attempt: 1, url: "http://127.0.0.1/production/verifyReceipt"), at: clock)
                state.apply(
                    .done(itemID: id, status: streamed % 9 == 0 ? 21005 : 0, environment: "Production",
                          attempts: [OnlineAttempt(url: "http://127.0.0.1/production/verifyReceipt", result: .apple(status: 0), latencyMilliseconds: Double(40 + streamed % 60))],
                          response: nil), at: clock)
                streamed += 1
            }
            let frame = DashboardView.render(state, width: 200, height: 60)
            times.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
            precondition(frame.width == 200)
        } while Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e9 < seconds
        times.sort()
        print(String(
            format: "render 200×60 with %d purchase rows%@: median %.3f ms, best %.3f ms, worst %.3f ms over %d frames (one thread)",
            rows, streamRate > 0 ? " while \(streamRate) validations/s stream in (events applied per frame, timed with it)" : "",
            times[times.count / 2], times[0], times[times.count - 1], times.count))
    }

    /// `count` distinct receipts, generated one by one as the batch pulls them (so the queue
    /// never holds them all), through the simulator at 100 ms latency.
    public func benchOnline(count: Int) async throws {
        let simulator = try await VerifyReceiptSimulator.start(SimulatorConfiguration(latency: 0.1))
        let client = VerifyReceiptClient(endpoints: try simulator.endpoints, requestTimeout: .seconds(10))
        let items = BatchItems((0..<count).lazy.map { BatchItem(id: $0, source: "synthetic \($0)", receiptData: SyntheticReceipt.base64($0)) })
        let start = DispatchTime.now().uptimeNanoseconds
        let summary = await BatchVerifier(client: client, concurrency: concurrency).run(items) { _ in }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        try await client.shutdown()
        try await simulator.stop()
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let ideal = Double(concurrency) / 0.1
        print(String(
            format: "online: %d receipts, concurrency %d, 100 ms latency: %.1f s, %.0f receipts/s (ideal %.0f: %.1f%%), %d valid, %d failed, peak RSS %.1f MB",
            summary.queued, concurrency, seconds, Double(summary.queued) / seconds, ideal, 100 * Double(summary.queued) / seconds / ideal,
            summary.valid, summary.failed, Double(usage.ru_maxrss) / 1024))
    }

    /// A customer with `transactions` transactions (3 subscriptions) looked up through the API
    /// simulator at 50 ms latency: the time to the complete answer beside the bound of the
    /// history's pages asked one after another; then, on one core, what a page costs us: a
    /// token minted and 20 signed items decoded and judged.
    public func benchLookup(transactions: Int) async throws {
        let latency = 0.05
        let bench = try await LookupBenchmark.start(transactions: transactions, latency: latency)
        let anchors = try TrustAnchors.apple.addingTestRoots([bench.simulator.pki.rootDER])
        let client = AppStoreServerAPIClient(credentials: bench.credentials, hosts: try bench.simulator.hosts)
        let service = CustomerLookupService(client: client, pipeline: ReceiptPipeline(at: Date(), evaluator: TrustEvaluator(anchors: anchors)))
        _ = await service.lookUp(.transactionID(bench.transactionID), environment: .production)  // warm: connections, caches
        var times: [Double] = []
        var last: CustomerLookupResult?
        for _ in 0..<3 {
            let start = DispatchTime.now().uptimeNanoseconds
            last = await service.lookUp(.transactionID(bench.transactionID), environment: .production)
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        guard let result = last else { return }
        let pages = (transactions + 19) / 20
        let bound = Double(pages) * latency
        let median = times.sorted()[times.count / 2]
        var verdicts: [String: Int] = [:]
        for item in result.transactions { verdicts[item.trust.verdict.rawValue, default: 0] += 1 }
        let runs = times.map { String(format: "%.3f", $0) }.joined(separator: " ")
        let head = "lookup: \(result.transactions.count) transactions (\(pages) history pages), "
            + "\(result.analysis?.subscriptions.count ?? 0) subscriptions, \(result.records.count) requests, 50 ms latency: "
        print(head + String(format: "%.3f s (median of 3: ", median) + runs
            + String(format: "), bound %d sequential pages %.3f s: %.2f×", pages, bound, median / bound))
        // Where the time beyond the bound goes: each history page's own round trip as the client
        // timed it (the simulator's 50 ms included) against the whole.
        let pageTimes = result.records.filter { $0.endpoint == .transactionHistory }.map(\.latencyMilliseconds)
        if !pageTimes.isEmpty {
            print(String(
                format: "history pages: %d round trips, mean %.1f ms, slowest %.1f ms; %.0f ms of the answer outside them",
                pageTimes.count, pageTimes.reduce(0, +) / Double(pageTimes.count), pageTimes.max() ?? 0,
                times.last! * 1000 - pageTimes.reduce(0, +)))
        }
        let counted = verdicts.keys.sorted().map { "\($0) \(verdicts[$0] ?? 0)" }.joined(separator: ", ")
        print("verdicts: \(counted)" + (result.failure.map { "; failed: \($0.reason)" } ?? ""))

        // One page's own work on one core: a token, and 20 signed items decoded and judged.
        guard let page = await client.transactionHistory(bench.transactionID, environment: .production).value else {
            throw BenchmarkError(.simulatorFailed, "the simulator did not answer the history")
        }
        let items = Array(page.signedTransactions.prefix(20))
        let decoder = ReceiptDecoder()
        let evaluator = TrustEvaluator(anchors: anchors)
        let options = TrustOptions()
        let rounds = 200
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<rounds {
            _ = try APIToken.mint(bench.credentials, now: Date())
            for token in items {
                let decoded = try decoder.decode(text: token)
                _ = await evaluator.evaluate(decoded, options: options)
            }
        }
        let perPage = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6 / Double(rounds)
        print(String(format: "per page, one core: %.2f ms (a token minted, %d signed items decoded and judged; chain cache warm)", perPage, items.count))
        try await client.shutdown()
        try await bench.simulator.stop()
    }
}

extension BenchmarkRun {
    /// A log of `lines` lines, one in ten holding a raw receipt, one in ten a receipt-data body,
    /// one in twenty a verifyReceipt response, the rest noise: receipts numbered from `first`, so
    /// logs with different `first` share none.
    static func ingestLog(lines: Int, first: Int, at url: URL) throws {
        var text = ""
        text.reserveCapacity(lines * 120)
        for i in 0..<lines {
            let n = first + i
            switch i % 10 {
            case 0: text += "2026-11-22T06:00:00Z INFO receipt=\(SyntheticReceipt.base64(n))\n"
            case 5: text += "{\"receipt-data\": \"\(SyntheticReceipt.base64(n, environment: "ProductionSandbox"))\", \"exclude-old-transactions\": true}\n"
            case 7 where i % 20 == 7:
                text += #"{"status": 0, "environment": "Sandbox", "receipt": {"bundle_id": "com.example.r\#(n)", "in_app": [{"transaction_id": "\#(n)", "product_id": "p", "purchase_date_ms": "1700000000000"}]}}"# + "\n"
            default: text += "2026-11-22T06:00:00Z INFO GET /api/items/\(i) 200 12ms user=\(i % 977)\n"
            }
        }
        try Data(text.utf8).write(to: url)
    }

    /// Follows `log` to its end into `store`, 1,000 lines to a transaction; returns the lines and
    /// what was recorded.
    static func ingest(_ log: URL, into store: any AuditBackend) async throws -> (lines: Int, counts: Ingestor.Counts) {
        let ingestor = Ingestor(store: store)
        let follower = LogFollower(path: log.path)
        var total = 0
        repeat {
            let batch = follower.poll()
            if batch.isEmpty { break }
            total += batch.count
            _ = try await ingestor.ingest(lines: batch, kind: .watch, source: log.path, at: Date())
        } while true
        return (total, ingestor.counts)
    }

    /// `--ingest-lines N`: a generated log followed and ingested into a fresh SQLite trail; with
    /// `--ingest-db URL`, into PostgreSQL too, by one writer and then by four at once (each its
    /// own log and its own connection pool, as four validators would), side by side in one run.
    public func benchIngest(lines: Int, postgres: String?) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("receiptdash-ingest-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // Receipt numbers of this run: a database reused between runs sees new receipts.
        let base = Int(Date().timeIntervalSince1970) % 100_000 * 100_000_000
        let logs = try (0..<5).map { index -> URL in
            let url = folder.appendingPathComponent("app-\(index).log")
            try Self.ingestLog(lines: lines, first: base + index * 10_000_000, at: url)
            return url
        }
        func report(_ what: String, _ lines: Int, _ seconds: Double, _ counts: Ingestor.Counts) {
            print(String(
                format: "ingest %@: %d lines in %.2f s: %.0f lines/s (%d new receipts, %d seen again, %d skipped)",
                what, lines, seconds, Double(lines) / seconds, counts.newReceipts, counts.seenAgain, counts.skipped))
        }
        let sqlite = try AuditStore(path: folder.appendingPathComponent("audit.sqlite").path)
        let start = ContinuousClock.now
        let local = try await Self.ingest(logs[0], into: sqlite)
        report("SQLite, one writer", local.lines, DurationText.seconds(ContinuousClock.now - start), local.counts)
        guard let postgres else { return }

        let one = try await openStore(postgres)
        let (single, singleSeconds) = try await AuditStoreService.closing(one) {
            let start = ContinuousClock.now
            let single = try await Self.ingest(logs[0], into: one)
            return (single, DurationText.seconds(ContinuousClock.now - start))
        }
        report("PostgreSQL, one writer", single.lines, singleSeconds, single.counts)

        var stores: [any AuditBackend] = []
        for _ in 0..<4 { stores.append(try await openStore(postgres)) }
        let (results, fourSeconds) = try await AuditStoreService.closing(stores) {
            let start = ContinuousClock.now
            let results = try await withThrowingTaskGroup(of: (lines: Int, counts: Ingestor.Counts).self) { group in
                for (index, store) in stores.enumerated() {
                    let log = logs[index + 1]
                    group.addTask { try await Self.ingest(log, into: store) }
                }
                var all: [(lines: Int, counts: Ingestor.Counts)] = []
                for try await result in group { all.append(result) }
                return all
            }
            return (results, DurationText.seconds(ContinuousClock.now - start))
        }
        var sum = Ingestor.Counts()
        for r in results {
            sum.newReceipts += r.counts.newReceipts
            sum.seenAgain += r.counts.seenAgain
            sum.skipped += r.counts.skipped
        }
        let total = results.map(\.lines).reduce(0, +)
        report("PostgreSQL, four writers together", total, fourSeconds, sum)
        print(String(format: "four writers / one writer: %.2f×", (Double(total) / fourSeconds) / (Double(single.lines) / singleSeconds)))
    }
}
