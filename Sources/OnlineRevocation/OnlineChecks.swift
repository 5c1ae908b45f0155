import Foundation
import ReceiptCore
import ReceiptTrust
import SwiftASN1
import Synchronization
@_spi(FixedExpiryValidationTime) import X509

/// What asking an OCSP responder gave: its answer's bytes, no answer, or an answer past the
/// byte limit.
public enum OCSPFetchResult: Sendable, Hashable {
    case response([UInt8])
    /// No connection, a failed one, or an HTTP status other than 200 (the words say which).
    case unreachable(String)
    /// The answer went past the byte limit (reading stopped there).
    case tooLarge
}

/// Posts one DER OCSP request to a responder (`application/ocsp-request`): the network half of
/// online checks, injected so the core opens no sockets (AppStoreClients' `HTTPOCSPTransport`
/// does it over AsyncHTTPClient; tests answer in memory or from the simulator's responder).
/// ``OnlineChecks`` bounds the time it is given and cancels it past that: an implementation
/// sets no shorter deadline of its own, and ends its request when cancelled.
public protocol OCSPTransport: Sendable {
    func fetch(request: [UInt8], uri: String, byteLimit: Int) async -> OCSPFetchResult
}

/// Online checks as Apple's libraries do them (`enableOnlineChecks`): OCSP asks about the leaf
/// (issuer: the intermediate) and the intermediate (issuer: the root), through
/// swift-certificates' `OCSPVerifierPolicy` over an injected ``OCSPTransport``.
///
/// - ``timeout`` bounds all the checks made for one input, on the injected clock: its chain's
///   and each nested token's, every request of each (``bounded()``). Past it the check answers
///   `ocsp-timeout` and the request in flight is cancelled. swift-certificates' verifier, which
///   asks through our requester, has a fixed 10 s watchdog of its own; the bound is kept under
///   it, so ours is the one that ends a check. An answer is read up to ``responseByteLimit``
///   bytes.
/// - Verified answers are kept until their `nextUpdate` (at most ``cacheLimit`` of them), and
///   so is a chain's result: a fleet's tokens, which share a few chains, pay for OCSP once per
///   `nextUpdate`. Retryable and rejected results are never kept.
/// - The policy runs fail-closed (`hard`): only good answers for both certificates pass. When it
///   fails, it runs again fail-open (`soft`, on the answers already fetched): failing again
///   means a verified revocation; passing means an answer that could not be verified.
public final class OnlineChecks: RevocationChecking {
    public let timeout: Duration
    public let responseByteLimit: Int
    public let cacheLimit: Int
    private let transport: any OCSPTransport
    private let clock: any Clock<Duration>
    private let state = Mutex(CacheState())

    struct ResponseKey: Hashable, Sendable {
        var uri: String
        var certID: [UInt8]
    }

    struct CacheState {
        var responses: [ResponseKey: (bytes: [UInt8], until: Date)] = [:]
        var chains: [TrustCache.CertificateChainKey: (result: OnlineCheckResult, until: Date)] = [:]
        /// Requests that reached the transport (for tests and the benchmark's warm check).
        var fetches = 0
    }

    /// The verifier's own watchdog (`OCSPVerifierPolicy`, 10 s of wall-clock time per run): a
    /// bound must stay under it.
    public static let verifierWatchdog = Duration.seconds(10)

    /// - Parameters:
    ///   - transport: posts requests to responders.
    ///   - timeout: the most the checks for one input may take, every request included (5 s;
    ///     under ``verifierWatchdog``).
    ///   - responseByteLimit: the largest answer read (64 KiB).
    ///   - cacheLimit: the most answers, and chain results, kept (1,000 each).
    ///   - clock: what the timeout is measured on (tests inject one).
    public init(
        transport: any OCSPTransport, timeout: Duration = .seconds(5), responseByteLimit: Int = 64 << 10,
        cacheLimit: Int = 1000, clock: any Clock<Duration> = ContinuousClock()
    ) {
        precondition(timeout > .zero && timeout < Self.verifierWatchdog, "an OCSP bound must be over 0 and under the verifier's 10 s")
        self.transport = transport
        self.timeout = timeout
        self.responseByteLimit = responseByteLimit
        self.cacheLimit = cacheLimit
        self.clock = clock
    }

    /// Requests that reached the transport so far.
    public var fetchCount: Int { state.withLock { $0.fetches } }
    /// Answers and chain results held now.
    public var cachedCount: (responses: Int, chains: Int) { state.withLock { ($0.responses.count, $0.chains.count) } }

    /// Asks about `leaf` and `intermediate` of a chain to `root`, judged at `now`, within
    /// ``timeout``.
    public func check(
        leaf: (Certificate, [UInt8]), intermediate: (Certificate, [UInt8]), root: (Certificate, [UInt8]), now: Date
    ) async -> OnlineCheckResult {
        await bounded().check(leaf: leaf, intermediate: intermediate, root: root, now: now)
    }

    /// The checks for one input: all of them within one ``timeout``, counted from now.
    public func bounded() -> any RevocationChecking {
        let clock = self.clock
        return Bound(checks: self, elapsed: Self.stopwatch(clock))
    }

    /// Checks sharing one bound (the ones ``TrustEvaluator`` makes for one input).
    private struct Bound: RevocationChecking {
        let checks: OnlineChecks
        let elapsed: @Sendable () -> Duration

        func check(
            leaf: (Certificate, [UInt8]), intermediate: (Certificate, [UInt8]), root: (Certificate, [UInt8]), now: Date
        ) async -> OnlineCheckResult {
            await checks.check(leaf: leaf, intermediate: intermediate, root: root, now: now, within: checks.timeout - elapsed())
        }
    }

    /// Time since now on `clock`.
    private static func stopwatch(_ clock: some Clock<Duration>) -> @Sendable () -> Duration {
        let start = clock.now
        return { start.duration(to: clock.now) }
    }

    /// A chain's result kept from earlier, or its check raced against what is left of the bound:
    /// past it, the check is cancelled (the request in flight with it) and answers `ocsp-timeout`.
    private func check(
        leaf: (Certificate, [UInt8]), intermediate: (Certificate, [UInt8]), root: (Certificate, [UInt8]), now: Date,
        within left: Duration
    ) async -> OnlineCheckResult {
        let key = TrustCache.CertificateChainKey(anchors: Data(), certificates: [leaf.1, intermediate.1, root.1])
        if let hit = state.withLock({ $0.chains[key] }), now < hit.until { return hit.result }

        guard left > .zero else {
            return .retryable(nil, .timeout, detail: "no OCSP answer within \(timeout): the input's other chains took it all")
        }
        let run = Run(leafSerial: Array(leaf.0.serialNumber.bytes), intermediateSerial: Array(intermediate.0.serialNumber.bytes))
        let clock = self.clock
        let finished = await withTaskGroup(of: OnlineCheckResult?.self) { group in
            group.addTask { await self.judge(leaf.0, intermediate.0, root.0, chain: key, run: run, now: now) }
            group.addTask {
                try? await Self.sleep(clock, left)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if let finished { return finished }
        let asked = run.asking.map { " about the \($0.position?.rawValue ?? "certificate") (\($0.uri))" } ?? ""
        return .retryable(run.asking?.position, .timeout, detail: "no OCSP answer\(asked) within \(timeout)")
    }

    /// Both policy runs over one chain, and what they say.
    private func judge(
        _ leaf: Certificate, _ intermediate: Certificate, _ root: Certificate, chain key: TrustCache.CertificateChainKey, run: Run,
        now: Date
    ) async -> OnlineCheckResult {
        let certificates = [leaf, intermediate, root]
        if await passes(.hard, certificates, run: run, now: now) {
            let events = run.events
            if events.isEmpty { return .noResponder }
            if let retry = events.first(where: { $0.retryable != nil }), case let (code, detail)? = retry.retryable {
                return .retryable(retry.position, code, detail: detail)
            }
            let until = events.compactMap { $0.single?.nextUpdate }.min() ?? now
            remember(events, chain: key, result: .good(until: until), until: until, now: now)
            return .good(until: until)
        }
        let hardEvents = run.events
        run.events = []
        if !(await passes(.soft, certificates, run: run, now: now)) {
            // Only a verified revocation fails the fail-open policy.
            if let event = run.events.last(where: { if case .revoked = $0.single?.status { true } else { false } }),
                let single = event.single, case .revoked(let at, let reason) = single.status
            {
                let result = OnlineCheckResult.revoked(event.position ?? .leaf, at: at, reason: reason)
                let until = single.nextUpdate ?? now
                remember([], chain: key, result: result, until: until, now: now)
                return result
            }
            return .rejected(nil, .responseRejected, detail: "the OCSP policy failed without a revoked answer")
        }
        // Fail-closed failed, fail-open passed: an answer was there but is not a verified good one.
        guard let event = hardEvents.last(where: { $0.answer != nil }), let answer = event.answer else {
            return .rejected(nil, .responseRejected, detail: "the chain's OCSP set-up is not acceptable (a root with an OCSP URL)")
        }
        let where_ = event.position.map { "the \($0.rawValue)'s " } ?? ""
        switch answer.status {
        case .malformedRequest, .unauthorized, .sigRequired:
            return .rejected(event.position, .refused, detail: "\(where_)responder refused the request (\(answer.status))")
        default: break
        }
        guard let single = event.single else {
            return .rejected(
                event.position, .otherCertificate, detail: "\(where_)responder answered about another certificate")
        }
        if case .unknown = single.status {
            return .rejected(event.position, .unknownStatus, detail: "\(where_)responder does not know the certificate")
        }
        return .rejected(
            event.position, .responseRejected,
            detail: "\(where_)OCSP answer is not verified: not signed by the issuer or an authorised responder, out of date, or not well-formed")
    }

    private func passes(_ mode: OCSPFailureMode, _ chain: [Certificate], run: Run, now: Date) async -> Bool {
        let requester = Requester(checks: self, run: run, now: now)
        var handled: [ASN1ObjectIdentifier] = []
        for cert in chain { for ext in cert.extensions where ext.critical && !handled.contains(ext.oid) { handled.append(ext.oid) } }
        var verifier = Verifier(rootCertificates: CertificateStore([chain[2]])) {
            // The chain itself was judged offline before: here only OCSP decides.
            JudgedOffline(verifyingCriticalExtensions: handled)
            OCSPVerifierPolicy(failureMode: mode, requester: requester, fixedExpiryValidationTime: now)
        }
        if case .validCertificate = await verifier.validate(leaf: chain[0], intermediates: CertificateStore([chain[1]])) {
            return true
        }
        return false
    }

    private func remember(_ events: [Event], chain: TrustCache.CertificateChainKey, result: OnlineCheckResult, until: Date, now: Date) {
        guard until > now else { return }
        state.withLock { state in
            for event in events {
                guard let bytes = event.bytes, let answer = event.answer, !answer.carriesNonce,
                    let next = event.single?.nextUpdate, next > now
                else { continue }
                Self.bound(&state.responses, limit: cacheLimit) { $0.until > now }
                state.responses[event.key] = (bytes, next)
            }
            Self.bound(&state.chains, limit: cacheLimit) { $0.until > now }
            state.chains[chain] = (result, until)
        }
    }

    /// Makes room for one entry: the expired ones go first, then any.
    private static func bound<Key: Hashable, Value>(_ table: inout [Key: Value], limit: Int, current: (Value) -> Bool) {
        guard table.count >= limit else { return }
        table = table.filter { current($0.value) }
        while table.count >= limit, let any = table.keys.first { table.removeValue(forKey: any) }
    }

    /// One request as the policy makes it: a cached verified answer, the answer fetched earlier
    /// in this check, or the transport's (none once the check is cancelled).
    fileprivate func answer(_ request: [UInt8], uri: String, run: Run, now: Date) async -> OCSPRequesterQueryResult {
        guard let ids = OCSPWire.requestedCertIDs(request), ids.count == 1 else {
            return .terminalError(OnlineCheckError.unreadableRequest)
        }
        let key = ResponseKey(uri: uri, certID: ids[0])
        let position = run.position(of: ids[0])
        if let earlier = run.fetched[key] { return run.replay(earlier) }
        let cached = state.withLock { state -> [UInt8]? in
            guard let hit = state.responses[key], now < hit.until else { return nil }
            return hit.bytes
        }
        let fetched: OCSPFetchResult
        if let cached {
            fetched = .response(cached)
        } else {
            // Past the bound: the check's answer is a timeout already, so nothing more is asked.
            if Task.isCancelled { return .nonTerminalError(CancellationError()) }
            state.withLock { $0.fetches += 1 }
            run.asking = (position, uri)
            fetched = await transport.fetch(request: request, uri: uri, byteLimit: responseByteLimit)
        }
        let event: Event
        switch fetched {
        case .unreachable(let why):
            event = Event(key: key, position: position, retryable: (.unreachable, "the OCSP responder \(uri) cannot be reached: \(why)"))
        case .tooLarge:
            event = Event(
                key: key, position: position, retryable: (.tooLarge, "the OCSP answer from \(uri) is over \(responseByteLimit) bytes"))
        case .response(let bytes):
            guard let answer = OCSPWire.response(bytes) else {
                event = Event(key: key, position: position, retryable: (.unreadable, "the OCSP answer from \(uri) is not an OCSP response"))
                break
            }
            switch answer.status {
            case .tryLater:
                event = Event(key: key, position: position, retryable: (.tryLater, "the OCSP responder \(uri) answered tryLater"))
            case .internalError:
                event = Event(key: key, position: position, retryable: (.responderError, "the OCSP responder \(uri) answered internalError"))
            default:
                event = Event(key: key, position: position, bytes: bytes, answer: answer)
            }
        }
        run.record(event)
        return Run.result(event)
    }

    private static func sleep<C: Clock>(_ clock: C, _ duration: Duration) async throws where C.Duration == Duration {
        try await clock.sleep(for: duration)
    }

    /// What one request gave, for the verdict and the cache.
    fileprivate struct Event: Sendable {
        var key: ResponseKey
        var position: OnlineCheckedCertificate?
        var retryable: (OnlineCheckResult.Code, String)?
        var bytes: [UInt8]?
        var answer: OCSPWire.Response?

        init(
            key: ResponseKey, position: OnlineCheckedCertificate?, retryable: (OnlineCheckResult.Code, String)? = nil,
            bytes: [UInt8]? = nil, answer: OCSPWire.Response? = nil
        ) {
            self.key = key
            self.position = position
            self.retryable = retryable
            self.bytes = bytes
            self.answer = answer
        }

        /// The single response about the certificate asked about.
        var single: OCSPWire.Single? { answer?.singles.first { $0.certID == key.certID } }
    }

    /// One check's requests (the fail-open run replays the fail-closed run's answers).
    fileprivate final class Run: Sendable {
        private struct State {
            var events: [Event] = []
            var fetched: [ResponseKey: Event] = [:]
            var asking: (position: OnlineCheckedCertificate?, uri: String)?
        }
        private let state = Mutex(State())
        let leafSerial: [UInt8]
        let intermediateSerial: [UInt8]

        init(leafSerial: [UInt8], intermediateSerial: [UInt8]) {
            self.leafSerial = leafSerial
            self.intermediateSerial = intermediateSerial
        }

        var events: [Event] {
            get { state.withLock { $0.events } }
            set { state.withLock { $0.events = newValue } }
        }

        var fetched: [ResponseKey: Event] { state.withLock { $0.fetched } }

        /// The last request sent to a responder: what a timeout was waiting for.
        var asking: (position: OnlineCheckedCertificate?, uri: String)? {
            get { state.withLock { $0.asking } }
            set { state.withLock { $0.asking = newValue } }
        }

        func record(_ event: Event) {
            state.withLock {
                $0.events.append(event)
                $0.fetched[event.key] = event
            }
        }

        /// An answer fetched earlier in this check, given again (the fail-open run).
        func replay(_ event: Event) -> OCSPRequesterQueryResult {
            state.withLock { $0.events.append(event) }
            return Self.result(event)
        }

        /// What the policy is told: the answer's bytes, or that there is none (which it lets
        /// pass: the event says retryable, and the check's result does).
        static func result(_ event: Event) -> OCSPRequesterQueryResult {
            if let bytes = event.bytes { return .response(bytes) }
            return .nonTerminalError(OnlineCheckError.noAnswer)
        }

        func position(of certID: [UInt8]) -> OnlineCheckedCertificate? {
            guard let serial = OCSPWire.serialNumber(ofCertID: certID) else { return nil }
            if serial == leafSerial { return .leaf }
            if serial == intermediateSerial { return .intermediate }
            return nil
        }
    }

    fileprivate struct Requester: OCSPRequester {
        let checks: OnlineChecks
        let run: Run
        let now: Date

        func query(request: [UInt8], uri: String) async -> OCSPRequesterQueryResult {
            await checks.answer(request, uri: uri, run: run, now: now)
        }
    }
}

enum OnlineCheckError: Error {
    case unreadableRequest
    case noAnswer
}

/// Lets the verifier build a chain already judged offline: every critical extension of its
/// certificates is declared handled (the offline policies handled them), and nothing is checked.
private struct JudgedOffline: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult { .meetsPolicy }
}
