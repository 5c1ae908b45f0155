import AppStoreAPI
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import NotificationForwarder
import Synchronization
import Testing
import TestSupport

/// The transport against a real downstream on loopback: a redirect is a failed attempt and is
/// not followed, a huge answer is read only up to its bound, an answer that never comes ends
/// at the time limit, and a 429's Retry-After is kept.
@Suite(.timeLimit(.minutes(5))) struct HTTPForwardTransportTests {
    final class Hits: Sendable {
        let paths = Mutex<[String]>([])
        func add(_ path: String) { paths.withLock { $0.append(path) } }
        var all: [String] { paths.withLock { $0 } }
    }

    @Test func redirectsHugeAnswersAndSilenceAreBounded() async throws {
        let hits = Hits()
        let (release, releaser) = AsyncStream<Void>.makeStream()
        let router = Router()
        router.post("/ok") { _, _ -> Response in
            hits.add("/ok")
            return Response(status: .noContent)
        }
        router.post("/redirect") { _, _ -> Response in
            hits.add("/redirect")
            return Response(status: .temporaryRedirect, headers: [.location: "/ok"])
        }
        router.post("/huge") { _, _ -> Response in
            hits.add("/huge")
            return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(repeating: 0x41, count: 8 << 20)))
        }
        router.post("/busy") { _, _ -> Response in
            hits.add("/busy")
            return Response(status: .tooManyRequests, headers: [.retryAfter: "120"])
        }
        router.post("/silent") { _, _ -> Response in
            hits.add("/silent")
            for await _ in release {}
            return Response(status: .ok)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let base = "http://127.0.0.1:\(try #require(client.port))"
            let transport = HTTPForwardTransport()
            func post(_ path: String, timeout: Duration = .seconds(10)) async -> ForwardAnswer {
                await transport.post(url: base + path, headers: [("webhook-id", "x")], body: Array("{}".utf8), timeout: timeout)
            }
            #expect(await post("/ok") == .status(204, retryAfter: nil))
            #expect(await post("/redirect") == .status(307, retryAfter: nil))
            #expect(await post("/huge") == .status(200, retryAfter: nil))
            #expect(await post("/busy") == .status(429, retryAfter: "120"))
            #expect(await post("/silent", timeout: .seconds(1)) == .failed(TransportFailure(.timeout)))
            releaser.finish()
            // The redirect's target was never asked.
            #expect(hits.all == ["/ok", "/redirect", "/huge", "/busy", "/silent"])
            await transport.shutdown()
        }
    }

    @Test func aClosedPortIsARefusal() async throws {
        let transport = HTTPForwardTransport()
        #expect(
            await transport.post(url: "http://127.0.0.1:\(TestPorts.refusing())/hook", headers: [], body: [], timeout: .seconds(1))
                == .failed(TransportFailure(.refused)))
        await transport.shutdown()
    }
}
