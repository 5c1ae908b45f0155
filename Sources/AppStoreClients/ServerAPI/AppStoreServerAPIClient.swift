import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import OutboundHTTP
import AppStoreAPI
import ReceiptCore
import RetryEngine

/// Progress of App Store Server API calls, for the live log.
public enum APIClientEvent: Sendable, Hashable {
    case sending(endpoint: APIEndpointKind, environment: APIEnvironment, attempt: Int)
    /// A retry in `inSeconds`; `until` is the `Retry-After` instant of a 429.
    case retrying(endpoint: APIEndpointKind, inSeconds: Double, until: Date?, after: APIAttemptResult)
    /// `auto`: production answered 4040010, sandbox is asked next.
    case switchingToSandbox(endpoint: APIEndpointKind)

    /// A retry's wait in words (`getTransactionHistory: HTTP 429; waiting until …`), for the
    /// commands' standard error; nil for other events.
    public var waitingLine: String? {
        guard case .retrying(let endpoint, let seconds, let until, let after) = self else { return nil }
        let when = until.map { " until \(AppleDate.iso8601($0))" } ?? String(format: " %.1f s", seconds)
        return "\(endpoint.rawValue): \(after); waiting\(when)"
    }
}

/// What a call came back with: the value or why not, which environment answered, and every
/// request made (retries and the sandbox hop included).
public struct APIAnswer<Value: Sendable>: Sendable {
    public var result: Result<Value, APIFailure>
    /// The environment of the last request made (nil when none was made).
    public var environment: APIEnvironment?
    public var records: [APIRequestRecord]

    public init(result: Result<Value, APIFailure>, environment: APIEnvironment?, records: [APIRequestRecord]) {
        self.result = result
        self.environment = environment
        self.records = records
    }

    public var value: Value? { try? result.get() }

    public var failure: APIFailure? {
        if case .failure(let failure) = result { return failure }
        return nil
    }
}

/// Every page of a transaction or refund history, in the order Apple sent them.
public struct TransactionPages: Sendable, Hashable {
    public var signedTransactions: [String]
    public var pages: Int
    /// The last page's `revision` (ask from there for newer items).
    public var revision: String?
    public var bundleId: String?
    public var appAppleId: Int64?
    /// Apple's `environment` field of the last page.
    public var environment: String?

    public init(
        signedTransactions: [String] = [], pages: Int = 0, revision: String? = nil, bundleId: String? = nil, appAppleId: Int64? = nil,
        environment: String? = nil
    ) {
        self.signedTransactions = signedTransactions
        self.pages = pages
        self.revision = revision
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
    }
}

/// An App Store Server API client: a fresh ES256 token per request, retries by the table in
/// `APIAttemptResult.retryDecision` (429 waits until `Retry-After`), every request recorded,
/// `auto` environment (production, then sandbox on 4040010; never on 401), every page of the
/// paged endpoints. TLS certificates are always verified; time and waiting come from the
/// injected ``ServiceClock``.
///
/// ```swift
/// let client = AppStoreServerAPIClient(credentials: loaded.credentials)
/// let answer = await client.transactionHistory("2000000123456789")
/// try await client.shutdown()
/// ```
public final class AppStoreServerAPIClient: Sendable {
    public let credentials: APICredentials
    public let hosts: APIHosts
    public let retry: RetryPolicy
    public let clock: ServiceClock
    /// Most pages read by one paging call (a server that never stops saying `hasMore` ends
    /// in `tooManyPages`).
    public let maximumPages: Int
    let random: @Sendable () -> Double
    let requestTimeout: TimeAmount
    let http: HTTPClient
    /// Where each attempt is counted (`GET /metrics` of a receiver in the same process).
    let metrics: ServiceMetrics
    /// Largest response body read (a page of 20 signed items is far smaller).
    static let maximumResponseBytes = 8 * 1024 * 1024

    /// - Parameters:
    ///   - extraTrustRoots: certificates to trust besides the system's (a corporate proxy's
    ///     root). Certificate checks are never turned off.
    ///   - random: the jitter source, in 0...1.
    public init(
        credentials: APICredentials, hosts: APIHosts = .apple, retry: RetryPolicy = RetryPolicy(), connectTimeout: TimeAmount = .seconds(5),
        requestTimeout: TimeAmount = .seconds(20), extraTrustRoots: [NIOSSLCertificate] = [], clock: ServiceClock = .system,
        maximumPages: Int = 1000, random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) },
        metrics: ServiceMetrics = .shared
    ) {
        self.metrics = metrics
        self.credentials = credentials
        self.hosts = hosts
        self.retry = retry
        self.clock = clock
        self.maximumPages = maximumPages
        self.random = random
        self.requestTimeout = requestTimeout
        http = OutboundHTTPClient.make(
            connectTimeout: connectTimeout, readTimeout: requestTimeout, extraTrustRoots: extraTrustRoots, connectionsPerHost: 16)
    }

    public func shutdown() async throws {
        try await http.shutdown()
    }

    // MARK: Endpoints

    /// Look Up Order ID (production only: `sandbox` fails with `notInSandbox`, nothing sent).
    public func lookUpOrder(
        _ orderID: String, environment: APIEnvironmentSelection = .auto, onEvent: (@Sendable (APIClientEvent) -> Void)? = nil
    ) async -> APIAnswer<OrderLookupResponse> {
        await call({ () throws(APIFailure) in try .lookUpOrderID(orderID) }, environment, as: OrderLookupResponse.self, onEvent)
    }

    /// Get Transaction Info.
    public func transactionInfo(
        _ transactionID: String, environment: APIEnvironmentSelection = .auto, onEvent: (@Sendable (APIClientEvent) -> Void)? = nil
    ) async -> APIAnswer<TransactionInfoResponse> {
        await call({ () throws(APIFailure) in try .transactionInfo(transactionID) }, environment, as: TransactionInfoResponse.self, onEvent)
    }

    /// Get App Transaction Info.
    public func appTransactionInfo(
        _ id: String, environment: APIEnvironmentSelection = .auto, onEvent: (@Sendable (APIClientEvent) -> Void)? = nil
    ) async -> APIAnswer<AppTransactionInfoResponse> {
        await call({ () throws(APIFailure) in try .appTransactionInfo(id) }, environment, as: AppTransactionInfoResponse.self, onEvent)
    }

    /// Get All Subscription Statuses.
    public func subscriptionStatuses(
        _ transactionID: String, status: [SubscriptionAPIStatus] = [], environment: APIEnvironmentSelection = .auto,
        onEvent: (@Sendable (APIClientEvent) -> Void)? = nil
    ) async -> APIAnswer<StatusResponse> {
        await call(
            { () throws(APIFailure) in try .subscriptionStatuses(transactionID, status: status) }, environment, as: StatusResponse.self,
            onEvent)
    }

    /// Get Transaction History v2, every page (the same filters with each `revision`).
    ///
    /// `onPage` is handed each page's signed transactions as the page arrives (with the
    /// environment that answered), so a caller can work on them while the next page is asked.
    public func transactionHistory(
        _ transactionID: String, filter: TransactionHistoryFilter = TransactionHistoryFilter(), environment: APIEnvironmentSelection = .auto,
        onEvent: (@Sendable (APIClientEvent) -> Void)? = nil, onPage: (@Sendable ([String], APIEnvironment) -> Void)? = nil
    ) async -> APIAnswer<TransactionPages> {
        await pages(environment, onEvent, onPage: onPage) { revision throws(APIFailure) in
            try .transactionHistory(transactionID, filter: filter, revision: revision)
        }
    }

    /// Get Refund History v2, every page.
    public func refundHistory(
        _ transactionID: String, environment: APIEnvironmentSelection = .auto, onEvent: (@Sendable (APIClientEvent) -> Void)? = nil
    ) async -> APIAnswer<TransactionPages> {
        await pages(environment, onEvent) { revision throws(APIFailure) in try .refundHistory(transactionID, revision: revision) }
    }

    /// Get Notification History, a page at a time (`paginationToken` from each page to the
    /// next): `onPage` is handed each page as it arrives, and the next page is asked only when
    /// it returns, so the client holds one page however many come; what a caller keeps of a
    /// page is its own fold. The answer is the number of pages read; on a failure, the pages
    /// before it have been handed over. What grows with the pages is `records`, one per request.
    public func notificationHistory(
        _ filter: NotificationHistoryFilter, environment: APIEnvironment, onEvent: (@Sendable (APIClientEvent) -> Void)? = nil,
        onPage: (NotificationHistoryPage) async -> Void
    ) async -> APIAnswer<Int> {
        var records: [APIRequestRecord] = []
        var token: String?
        for pages in 0..<maximumPages {
            let request: APIRequest
            do throws(APIFailure) { request = try .notificationHistory(filter, paginationToken: token) } catch {
                return APIAnswer(result: .failure(error), environment: nil, records: records)
            }
            let answer = await send(request, in: environment, as: NotificationHistoryPage.self, onEvent: onEvent)
            records += answer.records
            guard case .success(let page) = answer.result else {
                return APIAnswer(result: .failure(answer.failure ?? tooManyPages()), environment: environment, records: records)
            }
            if page.hasMore, page.paginationToken == nil {
                return APIAnswer(
                    result: .failure(APIFailure(.invalidResponse, "a notification history page says hasMore without a paginationToken")),
                    environment: environment, records: records)
            }
            token = page.paginationToken
            let hasMore = page.hasMore
            await onPage(page)
            guard hasMore else { return APIAnswer(result: .success(pages + 1), environment: environment, records: records) }
        }
        return APIAnswer(result: .failure(tooManyPages()), environment: environment, records: records)
    }

    /// Request a Test Notification.
    public func requestTestNotification(environment: APIEnvironment, onEvent: (@Sendable (APIClientEvent) -> Void)? = nil) async
        -> APIAnswer<TestNotificationResponse>
    {
        await send(.requestTestNotification(), in: environment, as: TestNotificationResponse.self, onEvent: onEvent)
    }

    /// Get Test Notification Status.
    public func testNotificationStatus(
        _ token: String, environment: APIEnvironment, onEvent: (@Sendable (APIClientEvent) -> Void)? = nil
    ) async -> APIAnswer<TestNotificationStatusResponse> {
        do throws(APIFailure) {
            return await send(try .testNotificationStatus(token), in: environment, as: TestNotificationStatusResponse.self, onEvent: onEvent)
        } catch {
            return APIAnswer(result: .failure(error), environment: nil, records: [])
        }
    }

    // MARK: Environments and pages

    /// One request with `auto` handled: production, then sandbox when production answers
    /// 4040010 (a 401 is explained, not retried in sandbox).
    public func call<Value: Decodable & Sendable>(
        _ makeRequest: () throws(APIFailure) -> APIRequest, _ selection: APIEnvironmentSelection, as type: Value.Type,
        _ onEvent: (@Sendable (APIClientEvent) -> Void)? = nil
    ) async -> APIAnswer<Value> {
        let request: APIRequest
        do throws(APIFailure) { request = try makeRequest() } catch { return APIAnswer(result: .failure(error), environment: nil, records: []) }
        switch selection {
        case .production: return await send(request, in: .production, as: type, onEvent: onEvent)
        case .sandbox: return await send(request, in: .sandbox, as: type, onEvent: onEvent)
        case .auto:
            let production = await send(request, in: .production, as: type, onEvent: onEvent)
            guard production.failure?.apiError == .transactionIDNotFound, request.endpoint.isAvailableInSandbox else { return production }
            onEvent?(.switchingToSandbox(endpoint: request.endpoint))
            var sandbox = await send(request, in: .sandbox, as: type, sandboxAfterProduction: true, onEvent: onEvent)
            sandbox.records = production.records + sandbox.records
            return sandbox
        }
    }

    /// Every page of a `revision`-paged endpoint: the first page decides the environment
    /// (`auto` as in ``call(_:_:as:_:)``), the others are asked there.
    func pages(
        _ selection: APIEnvironmentSelection, _ onEvent: (@Sendable (APIClientEvent) -> Void)?,
        onPage: (@Sendable ([String], APIEnvironment) -> Void)? = nil,
        _ makeRequest: (_ revision: String?) throws(APIFailure) -> APIRequest
    ) async -> APIAnswer<TransactionPages> {
        let first = await call({ () throws(APIFailure) in try makeRequest(nil) }, selection, as: TransactionPage.self, onEvent)
        var records = first.records
        guard case .success(var page) = first.result, let environment = first.environment else {
            return APIAnswer(result: .failure(first.failure ?? tooManyPages()), environment: first.environment, records: records)
        }
        var all = TransactionPages()
        while true {
            onPage?(page.signedTransactions, environment)
            all.signedTransactions += page.signedTransactions
            all.pages += 1
            all.revision = page.revision ?? all.revision
            all.bundleId = page.bundleId ?? all.bundleId
            all.appAppleId = page.appAppleId ?? all.appAppleId
            all.environment = page.environment ?? all.environment
            guard page.hasMore else { return APIAnswer(result: .success(all), environment: environment, records: records) }
            guard let revision = page.revision else {
                return APIAnswer(
                    result: .failure(APIFailure(.invalidResponse, "a page says hasMore without a revision")), environment: environment,
                    records: records)
            }
            guard all.pages < maximumPages else {
                return APIAnswer(result: .failure(tooManyPages()), environment: environment, records: records)
            }
            let request: APIRequest
            do throws(APIFailure) { request = try makeRequest(revision) } catch {
                return APIAnswer(result: .failure(error), environment: environment, records: records)
            }
            let next = await send(request, in: environment, as: TransactionPage.self, onEvent: onEvent)
            records += next.records
            switch next.result {
            case .failure(let failure): return APIAnswer(result: .failure(failure), environment: environment, records: records)
            case .success(let value): page = value
            }
        }
    }

    private func tooManyPages() -> APIFailure {
        APIFailure(.tooManyPages, "more than \(maximumPages) pages: the server kept saying hasMore")
    }

    // MARK: One request, with retries

    /// One request in one environment, retried by the table; every attempt recorded.
    public func send<Value: Decodable & Sendable>(
        _ request: APIRequest, in environment: APIEnvironment, as type: Value.Type, sandboxAfterProduction: Bool = false,
        onEvent: (@Sendable (APIClientEvent) -> Void)? = nil
    ) async -> APIAnswer<Value> {
        if environment == .sandbox, !request.endpoint.isAvailableInSandbox {
            return APIAnswer(result: .failure(.orderLookUpNotInSandbox), environment: nil, records: [])
        }
        if environment == .production, !request.endpoint.isAvailableInProduction {
            return APIAnswer(
                result: .failure(APIFailure(.invalidRequest, "Apple runs the performance test in sandbox only: give --environment sandbox")),
                environment: nil, records: [])
        }
        let host = hosts[environment]
        var records: [APIRequestRecord] = []
        var until: Date?
        func fail(_ failure: APIFailure) -> APIAnswer<Value> {
            APIAnswer(result: .failure(failure), environment: environment, records: records)
        }
        let retrier = Retrier(policy: retry, clock: clock.clock, random: random)
        let end = await retrier.run(willWait: { wait, _ in
            records[records.count - 1].waitSeconds = wait
            onEvent?(.retrying(endpoint: request.endpoint, inSeconds: wait, until: until, after: records[records.count - 1].result))
        }) { _ -> AttemptStep<APIAnswer<Value>> in
            let token: String
            do throws(APICredentialError) { token = try APIToken.mint(credentials, now: clock.now()) } catch {
                return .done(fail(APIFailure(.invalidRequest, error.reason)))
            }
            onEvent?(.sending(endpoint: request.endpoint, environment: environment, attempt: records.count + 1))
            let answered = await attempt(request, host: host, token: token, as: type)
            let record = answered.record
            metrics.apiAttempt(record)
            records.append(record)
            if let value = answered.value {
                return .done(APIAnswer(result: .success(value), environment: environment, records: records))
            }
            let decision = record.result.retryDecision
            if decision == .final {
                return .done(fail(APIFailure.final(record.result, environment: environment, sandboxTried: sandboxAfterProduction)))
            }
            until = decision == .rateLimited ? record.retryAfter : nil
            return .retry(retryAfter: until.map { max(0, $0.timeIntervalSince(clock.now())) })
        }
        switch end {
        case .done(let answer):
            return answer
        case .cancelled:
            return fail(APIFailure(.cancelled, "cancelled", last: records.last?.result))
        case .gaveUp(let giveUp):
            let last = records[records.count - 1].result
            // A failure without an answer names the URL it was sent to.
            let words = if case .transport(let failure) = last { failure.said(at: records[records.count - 1].url) } else { last.description }
            if giveUp.kind == .retries { return fail(APIFailure(.retriesExhausted, giveUp.sentence(words), last: last)) }
            let asked = until.map { "rate limited until \(Self.formatted($0)), \(String(format: "%.1f", giveUp.nextWait)) s away" }
            return fail(APIFailure(.retryBudgetExhausted, giveUp.sentence(words, asked: asked), last: last))
        }
    }

    /// `2026-11-24T17:04:12Z`.
    static func formatted(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle())
    }

    /// One HTTP exchange: the record, and the decoded value on a 2xx.
    private func attempt<Value: Decodable & Sendable>(_ request: APIRequest, host: APIHost, token: String, as type: Value.Type) async -> (
        record: APIRequestRecord, value: Value?
    ) {
        let url = host.url(for: request)
        var retryAfter: Date?
        var dateHeader: String?
        var value: Value?
        var undecodedBody: String?
        let result: APIAttemptResult
        let start = DispatchTime.now().uptimeNanoseconds
        do {
            var http = HTTPClientRequest(url: url)
            http.method = HTTPMethod(rawValue: request.method.rawValue)
            http.headers.add(name: "Authorization", value: "Bearer \(token)")
            http.headers.add(name: "Accept", value: "application/json")
            http.headers.add(name: "User-Agent", value: "receiptdash/0.1")
            if let body = request.body {
                http.headers.add(name: "Content-Type", value: request.contentType ?? APIRequest.jsonContentType)
                http.body = .bytes(ByteBuffer(bytes: body))
            } else if request.method != .get, request.method != .delete {
                http.body = .bytes(ByteBuffer())
            }
            let response = try await self.http.execute(http, timeout: requestTimeout)
            let status = Int(response.status.code)
            retryAfter = response.headers.first(name: "Retry-After").flatMap { APIRetryAfter.instant($0, now: clock.now()) }
            dateHeader = response.headers.first(name: "Date")
            let bytes = Data([UInt8](buffer: try await response.body.collect(upTo: Self.maximumResponseBytes)))
            if (200...299).contains(status) {
                do {
                    // 200 and 202 without a body: the writes that answer nothing.
                    value = try bytes.isEmpty && type == APINoContent.self ? (APINoContent() as? Value) : JSONDecoder().decode(type, from: bytes)
                    result = .success(httpStatus: status)
                } catch {
                    undecodedBody = String(decoding: bytes.prefix(APIRequestRecord.undecodedBodyLimit), as: UTF8.self)
                    result = .transport(
                        TransportFailure(
                            .invalidResponse, recordedDescription: "HTTP \(status), but the body is not the App Store Server API's JSON"))
                }
            } else if let body = try? JSONDecoder().decode(APIErrorBody.self, from: bytes), let code = body.errorCode {
                result = .apiError(httpStatus: status, code: APIErrorCode(code))
            } else {
                result = .http(status: status)
            }
        } catch {
            result = .transport(TransportFailure.classify(error))
        }
        let latency = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        var record = APIRequestRecord(
            endpoint: request.endpoint, environment: host.environment, url: url, result: result, latencyMilliseconds: latency,
            retryAfter: retryAfter)
        record.dateHeader = dateHeader
        record.undecodedBody = undecodedBody
        return (record, value)
    }
}
