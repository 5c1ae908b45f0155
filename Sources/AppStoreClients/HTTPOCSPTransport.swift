import AsyncHTTPClient
import NIOCore
import OnlineRevocation
import OutboundHTTP
import ReceiptCore

/// Online checks' network half over AsyncHTTPClient: one POST of a DER OCSP request
/// (`application/ocsp-request`, RFC 6960 appendix A.1) to the responder URL a certificate
/// names, the answer read up to the byte limit.
///
/// It sets no deadline of its own beyond a backstop: ``OnlineChecks`` bounds everything one
/// token asks (its chain's and its nested tokens' requests together, 5 s) and cancels what is
/// in flight past that, which cancels the HTTP request.
public struct HTTPOCSPTransport: OCSPTransport {
    private let client: HTTPClient
    /// A backstop only: ``OnlineChecks`` cancels a request at its own, shorter timeout.
    private let backstop: TimeAmount

    /// One client for the process, never shut down: Apple's client settings (no redirects, a
    /// refused connection failing its request at once rather than being tried again until the
    /// connect timeout, which would report an unreachable responder as a late one).
    public static let processClient = OutboundHTTPClient.make(
        connectTimeout: .seconds(5), readTimeout: .seconds(10), extraTrustRoots: [], connectionsPerHost: 4)

    /// - Parameter client: the HTTP client (``processClient``: nothing to shut down).
    public init(client: HTTPClient = HTTPOCSPTransport.processClient, backstop: TimeAmount = .seconds(30)) {
        self.client = client
        self.backstop = backstop
    }

    public func fetch(request: [UInt8], uri: String, byteLimit: Int) async -> OCSPFetchResult {
        var http = HTTPClientRequest(url: uri)
        http.method = .POST
        http.headers.add(name: "Content-Type", value: "application/ocsp-request")
        http.headers.add(name: "Accept", value: "application/ocsp-response")
        http.body = .bytes(ByteBuffer(bytes: request))
        let response: HTTPClientResponse
        do {
            response = try await client.execute(http, timeout: backstop)
        } catch {
            return .unreachable(String(describing: error))
        }
        guard response.status == .ok else { return .unreachable("HTTP \(response.status.code)") }
        if let length = response.headers.first(name: "Content-Length").flatMap(Int.init), length > byteLimit {
            return .tooLarge
        }
        do {
            let body = try await response.body.collect(upTo: byteLimit)
            return .response(Array(body.readableBytesView))
        } catch is NIOTooManyBytesError {
            return .tooLarge
        } catch {
            return .unreachable(String(describing: error))
        }
    }
}
