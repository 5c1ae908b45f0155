import OnlineRevocation

/// An ``OCSPResponder`` asked in the same process, as online checks' transport: the reply its
/// HTTP server would send, with no socket and no wait. An answer arrives at once, so a check is
/// never late because the machine is busy (swift-certificates gives each OCSP run a fixed 10 s
/// of wall-clock time); a `silent` responder answers nothing until the check is cancelled.
public struct InProcessOCSPTransport: OCSPTransport {
    public let responder: OCSPResponder

    public init(_ responder: OCSPResponder) {
        self.responder = responder
    }

    public func fetch(request: [UInt8], uri: String, byteLimit: Int) async -> OCSPFetchResult {
        let reply = responder.answer(request)
        if reply.hang {
            // Nothing ever comes: wait for the check's bound to cancel the request.
            let (never, stop) = AsyncStream<Void>.makeStream()
            await withTaskCancellationHandler {
                for await _ in never {}
            } onCancel: {
                stop.finish()
            }
            return .unreachable("cancelled")
        }
        guard reply.status == 200 else { return .unreachable("HTTP \(reply.status)") }
        guard reply.body.count <= byteLimit else { return .tooLarge }
        return .response(reply.body)
    }
}
