import Foundation
import AppStoreAPI
import ReceiptCore
import Synchronization

/// One Send Consumption Information PUT the simulator answered, accepted or refused.
public struct ReceivedConsumption: Sendable, Hashable {
    public var environment: APIEnvironment
    /// The transaction id of the path, as sent.
    public var transactionID: String
    /// The body as sent (its first ``ConsumptionLog/bodyLimit`` bytes).
    public var body: [UInt8]
    /// The body was longer than what is kept.
    public var bodyCut: Bool
    /// 202 when accepted; otherwise Apple's refusal (400, 404).
    public var status: Int
    /// Apple's error code of a refusal; nil when accepted.
    public var errorCode: APIErrorCode?
    /// When it was answered, UNIX milliseconds on the simulator's clock.
    public var receivedMS: Int64

    /// `{"environment":"Sandbox","transaction_id":"…","status":202,"error_code":null,
    /// "received_ms":…,"body":{…}}`: the body as its JSON when it is JSON, else as text.
    public var json: JSONValue {
        var fields: [String: JSONValue] = [
            "environment": .string(environment.rawValue), "transaction_id": .string(transactionID), "status": .integer(Int64(status)),
            "error_code": errorCode.map { .integer(Int64($0.rawValue)) } ?? .null, "received_ms": .integer(receivedMS),
            "body": (bodyCut ? nil : try? JSONValue.parse(body, maximumDepth: 8)) ?? .string(String(decoding: body, as: UTF8.self)),
        ]
        if bodyCut { fields["body_cut"] = .bool(true) }
        return .object(fields)
    }
}

/// The consumption PUTs received, in order, bounded: the newest ``limit`` are kept and the
/// older ones counted as dropped; the accepted PUTs per transaction are counted for all.
struct ConsumptionLog {
    static let bodyLimit = 4096
    var limit = 100_000
    /// A ring: the oldest kept entry is at `head` once the ring is full.
    private var entries: [ReceivedConsumption] = []
    private var head = 0
    private(set) var dropped = 0
    private(set) var accepted: [String: Int] = [:]

    mutating func append(_ entry: ReceivedConsumption) {
        if entry.status == 202 { accepted[entry.transactionID, default: 0] += 1 }
        if entries.count < limit {
            entries.append(entry)
            return
        }
        entries[head] = entry
        head = (head + 1) % entries.count
        dropped += 1
    }

    /// Oldest first.
    var ordered: [ReceivedConsumption] { Array(entries[head...] + entries[..<head]) }
}

extension ServerAPIService {
    /// Every consumption PUT kept, oldest first (the newest 100,000).
    public func consumptionReceived() -> [ReceivedConsumption] { consumptionLog.withLock { $0.ordered } }

    /// Accepted consumption PUTs per transaction id, since start (dropped entries included).
    public func consumptionAccepted() -> [String: Int] { consumptionLog.withLock { $0.accepted } }

    /// Consumption PUTs no longer kept (the log keeps the newest 100,000).
    public var consumptionDropped: Int { consumptionLog.withLock { $0.dropped } }

    /// Keeps at most `limit` consumption PUTs from now on (for tests of the bound).
    func limitConsumptionLog(to limit: Int) { consumptionLog.withLock { $0.limit = max(1, limit) } }

    /// Notes one answered consumption PUT and returns its answer.
    func noteConsumption(_ transactionID: String, _ body: [UInt8], _ context: Context, _ reply: ServerAPIReply) -> ServerAPIReply {
        let code = reply.status == 202 ? nil : (reply.json?["errorCode"]?.int64).map { APIErrorCode(Int($0)) }
        let entry = ReceivedConsumption(
            environment: context.environment, transactionID: transactionID, body: Array(body.prefix(ConsumptionLog.bodyLimit)),
            bodyCut: body.count > ConsumptionLog.bodyLimit, status: reply.status, errorCode: code, receivedMS: context.nowMS)
        consumptionLog.withLock { $0.append(entry) }
        return reply
    }

    /// `GET /control/consumption`: `{"received":[…],"per_transaction":{"<id>":<accepted>},
    /// "dropped":N}` (``ReceivedConsumption/json``, oldest first).
    func controlConsumptionListing() -> ServerAPIReply {
        let (entries, accepted, dropped) = consumptionLog.withLock { ($0.ordered, $0.accepted, $0.dropped) }
        return json(
            .object([
                "received": .array(entries.map(\.json)),
                "per_transaction": .object(accepted.mapValues { .integer(Int64($0)) }),
                "dropped": .integer(Int64(dropped)),
            ]))
    }
}
