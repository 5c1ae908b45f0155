import AppStoreAPI
import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// An answer to a POST whose body the caller does not keep: a webhook's or a notification's.
public struct BoundedAnswer: Sendable, Hashable {
    /// The HTTP status: the answer, whatever follows it.
    public var status: Int
    /// `Retry-After` as sent (seconds or an HTTP date), unparsed.
    public var retryAfter: String?
    /// Whether the body ended within the byte limit and the deadline (a cut body does not
    /// change the status; the connection is then closed rather than reused).
    public var bodyComplete: Bool

    public init(status: Int, retryAfter: String?, bodyComplete: Bool) {
        self.status = status
        self.retryAfter = retryAfter
        self.bodyComplete = bodyComplete
    }
}

extension HTTPClient {
    /// POSTs `body` and waits for the status, all within `deadline`: the wait for a connection,
    /// the write and the answer's head. Then at most `answerLimit` bytes of the answer are read
    /// and dropped until the same deadline, so the connection can serve the next request.
    ///
    /// Headers whose names or values the HTTP grammar forbids (CR, LF, NUL) are refused before
    /// anything is sent (`not-sent`), as the client refuses a URL it cannot send to. Cancelling
    /// the calling task ends the request at once.
    public func postBounded(
        url: String, headers: [(String, String)], body: [UInt8], deadline: NIODeadline, answerLimit: Int
    ) async throws(TransportFailure) -> BoundedAnswer {
        for (name, value) in headers where !Self.sendable(name: name, value: value) {
            throw TransportFailure(.notSent, detail: "the header \(name) holds a character HTTP does not allow")
        }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let response: HTTPClientResponse
        do {
            response = try await execute(request, deadline: deadline)
        } catch {
            throw TransportFailure.classify(error)
        }
        let complete = await Self.drain(response.body, limit: answerLimit, deadline: deadline)
        return BoundedAnswer(status: Int(response.status.code), retryAfter: response.headers.first(name: "retry-after"), bodyComplete: complete)
    }

    /// Reads and drops the answer's body until it ends (true), passes `limit` bytes, fails or
    /// the deadline comes (false).
    static func drain(_ body: HTTPClientResponse.Body, limit: Int, deadline: NIODeadline) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                var read = 0
                do {
                    for try await chunk in body {
                        read += chunk.readableBytes
                        if read > limit { return false }
                    }
                    return true
                } catch {
                    return false
                }
            }
            group.addTask {
                let left = deadline - NIODeadline.now()
                if left.nanoseconds > 0 { try? await _Concurrency.Task.sleep(nanoseconds: UInt64(left.nanoseconds)) }
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Whether a header can be sent as given: a token name, and a value without CR, LF or NUL.
    static func sendable(name: String, value: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }
            && !value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
    }
}
