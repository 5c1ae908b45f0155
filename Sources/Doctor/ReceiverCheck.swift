import AppStoreClients
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import OutboundHTTP
import AppStoreAPI
import PlainWords
import ReceiptCore

/// A notification receiver's URL (`--receiver`): something answers there, its TLS certificate
/// is trusted and not about to expire, and `GET /health` says the store is writable.
enum ReceiverCheck {
    /// A certificate that expires sooner than this is a failure: Apple's deliveries start
    /// failing the day it lapses, and renewing takes time.
    static let renewalWindowDays = 30.0

    static func run(_ text: String, extraTrustRoots: [NIOSSLCertificate], now: Date) async -> [DoctorCheck] {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
            let host = url.host, !host.isEmpty
        else {
            return [DoctorCheck("receiver", .failed, "\(text) is not an http(s) URL", fix: "give the URL Apple posts to, e.g. https://example.com/notifications")]
        }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        let origin = "\(scheme)://\(host.contains(":") ? "[\(host)]" : host)\(url.port.map { ":\($0)" } ?? "")"
        var checks: [DoctorCheck] = []
        if scheme == "http" {
            guard Loopback.isLoopback(host: host) else {
                return [
                    DoctorCheck(
                        "receiver", .failed, "\(origin) is plain http: Apple posts notifications to https URLs only",
                        fix: "serve it behind TLS (receiptdash receive --tls-cert … --tls-key …, or a proxy)")
                ]
            }
        } else {
            checks.append(await certificateCheck(host: host, port: port, roots: extraTrustRoots, now: now))
            if checks.last?.status == .failed, checks.last?.id == "receiver" { return checks }
        }
        checks.append(await healthCheck(origin: origin, roots: extraTrustRoots))
        return checks
    }

    /// One TLS handshake with full verification (the system's roots and `--ca-file`), then the
    /// leaf's expiry.
    static func certificateCheck(host: String, port: Int, roots: [NIOSSLCertificate], now: Date) async -> DoctorCheck {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .fullVerification
        if !roots.isEmpty { tls.additionalTrustRoots = [.certificates(roots)] }
        let leaf: NIOSSLCertificate?
        do {
            leaf = try await handshake(host: host, port: port, tls: tls)
        } catch let error as NIOSSLError {
            return DoctorCheck(
                "receiver.certificate", .failed, "\(host):\(port) presents a certificate this machine does not trust (\(error))",
                fix: "serve the full chain of a certificate from a public CA for \(host) (Apple trusts those only)")
        } catch let error as BoringSSLError {
            return DoctorCheck(
                "receiver.certificate", .failed, "\(host):\(port): the TLS handshake failed (\(error))",
                fix: "serve the full chain of a certificate from a public CA for \(host) (Apple trusts those only)")
        } catch {
            return DoctorCheck(
                "receiver", .failed, "nothing answers at \(host):\(port) (\(TransportFailure.classify(error).description))",
                fix: "start the receiver (receiptdash receive …) or check the host, port and firewall")
        }
        guard let leaf else { return DoctorCheck("receiver.certificate", .failed, "\(host):\(port) sent no certificate") }
        let expires = Date(timeIntervalSince1970: TimeInterval(leaf.notValidAfter))
        let days = expires.timeIntervalSince(now) / 86_400
        let when = AppleDate.iso8601(expires)
        if days < renewalWindowDays {
            return DoctorCheck(
                "receiver.certificate", .failed,
                "\(host)'s certificate expires \(when) (\(days < 0 ? "already expired" : "in \(Int(days.rounded(.down))) days"))",
                fix: "renew it now: Apple stops delivering the day it expires")
        }
        return DoctorCheck("receiver.certificate", .ok, "\(host)'s certificate is trusted and valid until \(when) (\(CountNoun.day.count(Int(days))))")
    }

    /// `GET /health` on the receiver's origin.
    static func healthCheck(origin: String, roots: [NIOSSLCertificate]) async -> DoctorCheck {
        let client = OutboundHTTPClient.make(connectTimeout: .seconds(5), readTimeout: .seconds(10), extraTrustRoots: roots, connectionsPerHost: 1)
        let check = await health(origin: origin, client: client)
        try? await client.shutdown()
        return check
    }

    private static func health(origin: String, client: HTTPClient) async -> DoctorCheck {
        let start = DispatchTime.now().uptimeNanoseconds
        do {
            let response = try await client.execute(HTTPClientRequest(url: origin + "/health"), timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 64 * 1024)
            let ms = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
            let said = String(buffer: body).trimmingCharacters(in: .whitespacesAndNewlines).prefix(200)
            if response.status.code == 200 {
                return DoctorCheck("receiver.health", .ok, "\(origin)/health answers 200 in \(String(format: "%.0f", ms)) ms")
            }
            return DoctorCheck(
                "receiver.health", .failed, "\(origin)/health answers HTTP \(response.status.code)\(said.isEmpty ? "" : ": \(said)")",
                fix: response.status.code == 503 ? "the receiver's store cannot be written: see its log" : "is this receiptdash receive? check the URL")
        } catch {
            return DoctorCheck(
                "receiver", .failed, "nothing answers at \(origin) (\(TransportFailure.classify(error).description))",
                fix: "start the receiver (receiptdash receive …) or check the host, port and firewall")
        }
    }

    /// Connects, completes the handshake, and returns the peer's leaf certificate.
    static func handshake(host: String, port: Int, tls: TLSConfiguration) async throws -> NIOSSLCertificate? {
        let context = try NIOSSLContext(configuration: tls)
        let serverName = Loopback.isLoopback(host: host) || host.allSatisfy({ $0.isNumber || $0 == "." || $0 == ":" }) ? nil : host
        let group = MultiThreadedEventLoopGroup.singleton
        let done = group.any().makePromise(of: Void.self)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(.seconds(5))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let handler = try NIOSSLClientHandler(context: context, serverHostname: serverName)
                        try channel.pipeline.syncOperations.addHandler(handler)
                        try channel.pipeline.syncOperations.addHandler(HandshakeWatcher(done: done))
                    }
                }
                .connect(host: host, port: port).get()
        } catch {
            done.fail(error)  // a promise is never left unfulfilled
            throw error
        }
        defer { channel.close(promise: nil) }
        let timeout = channel.eventLoop.scheduleTask(in: .seconds(10)) { done.fail(ChannelError.connectTimeout(.seconds(10))) }
        defer { timeout.cancel() }
        try await done.futureResult.get()
        return try await channel.pipeline.handler(type: NIOSSLClientHandler.self).map { $0.peerCertificate }.get()
    }

    /// Completes `done` when the TLS handshake ends, either way.
    final class HandshakeWatcher: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        let done: EventLoopPromise<Void>
        init(done: EventLoopPromise<Void>) { self.done = done }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case TLSUserEvent.handshakeCompleted = event { done.succeed(()) }
            context.fireUserInboundEventTriggered(event)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            done.fail(error)
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            done.fail(ChannelError.eof)
            context.fireChannelInactive()
        }
    }
}
