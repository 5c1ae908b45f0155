import Foundation
import ReceiptCore

/// One input taken through the whole pipeline: read, decoded, its signature and chain judged,
/// its purchases analysed. What every front end shows: `inspect`, `verify`, `watch` and the
/// dashboard all build on this one value.
public struct JudgedInput: Sendable {
    /// Where it came from (a path, `-`, `paste 3`, `demo/NAME`).
    public var source: String
    /// The bytes as read, when they could be read.
    public var bytes: [UInt8]?
    /// The decoded input, or why it could not be read or decoded.
    public var result: Result<DecodedInput, ReceiptDecodingError>
    /// The offline signature and chain checks; nil when they were not asked for.
    public var trust: TrustReport?
    /// Each subscription's state and each one-time purchase at the pipeline's instant.
    public var analysis: PurchaseAnalysis?

    public init(
        source: String, bytes: [UInt8]?, result: Result<DecodedInput, ReceiptDecodingError>, trust: TrustReport? = nil,
        analysis: PurchaseAnalysis? = nil
    ) {
        self.source = source
        self.bytes = bytes
        self.result = result
        self.trust = trust
        self.analysis = analysis
    }

    /// The decoded input, when decoding succeeded.
    public var decoded: DecodedInput? {
        if case .success(let decoded) = result { return decoded }
        return nil
    }

    /// Why the input could not be read or decoded.
    public var error: ReceiptDecodingError? {
        if case .failure(let error) = result { return error }
        return nil
    }
}

/// The one pipeline from input to judged result: decode → trust → analysis.
///
/// Pure but for the trust step's use of the bundled roots; the instant subscriptions are
/// judged at is a parameter, nothing reads the clock.
///
/// ```swift
/// let pipeline = ReceiptPipeline(at: Date())
/// for input in InputFiles.load(["receipts/"], limit: pipeline.decoder.limits.maximumInputBytes) {
///     let judged = await pipeline.judge(input)
///     print(judged.source, judged.trust?.verdict ?? .unverifiable)
/// }
/// ```
public struct ReceiptPipeline: Sendable {
    public var decoder: ReceiptDecoder
    public var evaluator: TrustEvaluator
    public var trustOptions: TrustOptions
    /// Whether to run the offline signature and chain checks.
    public var checksTrust: Bool
    /// Whether to analyse subscriptions and one-time purchases.
    public var analyses: Bool
    /// The instant subscriptions are judged at.
    public var instant: Date

    public init(
        at instant: Date, decoder: ReceiptDecoder = ReceiptDecoder(), evaluator: TrustEvaluator = TrustEvaluator(),
        trustOptions: TrustOptions? = nil, checksTrust: Bool = true, analyses: Bool = true
    ) {
        self.instant = instant
        self.decoder = decoder
        self.evaluator = evaluator
        self.trustOptions = trustOptions ?? TrustOptions()
        self.checksTrust = checksTrust
        self.analyses = analyses
    }

    /// The largest input the decoder takes, for reading inputs.
    public var inputLimit: Int { decoder.limits.maximumInputBytes }

    /// Decodes one input without judging it (for callers that only record or send it).
    public func decode(_ input: LoadedInput) -> JudgedInput {
        switch input.result {
        case .success(let bytes):
            return JudgedInput(source: input.source, bytes: bytes, result: decoder.result(bytes))
        case .failure(let error):
            return JudgedInput(source: input.source, bytes: nil, result: .failure(error))
        }
    }

    /// Takes one input through the whole pipeline. A failure at any stage is kept in the
    /// result, never thrown: nothing else is lost because one input is bad.
    public func judge(_ input: LoadedInput) async -> JudgedInput {
        let decoded = decode(input)
        guard case .success(let value) = decoded.result, let bytes = decoded.bytes else { return decoded }
        return await judge(source: input.source, decoded: value, bytes: bytes)
    }

    /// Judges an input decoded elsewhere (built in memory, or decoded by a caller that needed
    /// it first); `bytes` are what it was decoded from.
    public func judge(source: String, decoded: DecodedInput, bytes: [UInt8]) async -> JudgedInput {
        var judged = JudgedInput(source: source, bytes: bytes, result: .success(decoded))
        if checksTrust { judged.trust = await evaluator.evaluate(decoded, options: trustOptions) }
        if analyses { judged.analysis = PurchaseAnalysis.analyze([decoded], at: instant) }
        return judged
    }

    /// Judges one input given as bytes.
    public func judge(source: String, bytes: [UInt8]) async -> JudgedInput {
        await judge(LoadedInput(source: source, result: .success(bytes)))
    }

    /// Judges inputs one after another, in order.
    public func judge(_ inputs: [LoadedInput]) async -> [JudgedInput] {
        var out: [JudgedInput] = []
        out.reserveCapacity(inputs.count)
        for input in inputs { out.append(await judge(input)) }
        return out
    }
}
