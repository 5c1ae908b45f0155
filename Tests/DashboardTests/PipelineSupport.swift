import Foundation
import ReceiptCore
import ReceiptTrust

@testable import Dashboard

/// What the UI loop does with inputs, for tests that drive the state without a loop: take
/// them through the pipeline, judged at the state's instant, and add them.
extension DashboardState {
    var pipeline: ReceiptPipeline { ReceiptPipeline(at: now, trustOptions: TrustOptions(now: now)) }

    mutating func load(source: String, bytes: [UInt8]) async {
        add(await pipeline.judge(source: source, bytes: bytes))
    }

    mutating func loadDecoded(source: String, _ decoded: DecodedInput) async {
        add(await pipeline.judge(source: source, decoded: decoded, bytes: []))
    }

    /// Carries out the pipeline effects (`.judge`) as the loop does; returns the others.
    @discardableResult
    mutating func perform(_ effects: [Effect]) async -> [Effect] {
        var rest: [Effect] = []
        for effect in effects {
            if case .judge(let inputs, let origin) = effect {
                add(await pipeline.judge(inputs), from: origin)
            } else {
                rest.append(effect)
            }
        }
        return rest
    }

    /// Applies an audit feed event as the loop does, judging its receipt first.
    mutating func apply(_ event: AuditFeedEvent, at time: Date) async {
        var judged: JudgedInput?
        if case .receipt(_, let source, let bytes) = event { judged = await pipeline.judge(source: source, bytes: bytes) }
        apply(event, judged: judged, at: time)
    }
}
