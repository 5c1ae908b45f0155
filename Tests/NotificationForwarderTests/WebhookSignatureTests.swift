import Foundation
import NotificationForwarder
import Testing

@Suite("Standard Webhooks signatures")
struct WebhookSignatureTests {
    /// The Standard Webhooks specification's own example (secret, id, timestamp, body and the
    /// signature its reference libraries produce).
    @Test func signsTheSpecificationsExample() throws {
        let secret = try WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        let body = Array(#"{"test": 2432232314}"#.utf8)
        let signature = WebhookSignature.sign(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: body, secret: secret)
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test func verifiesWithinTheToleranceOnly() throws {
        let secret = try WebhookSecret(WebhookSecret.generate())
        let body = Array(#"{"a":1}"#.utf8)
        let header = "v1,bm90IGl0 " + WebhookSignature.sign(id: "id-1", timestamp: 1_000_000, body: body, secret: secret)
        let at = Date(timeIntervalSince1970: 1_000_100)
        #expect(WebhookSignature.verify(id: "id-1", timestamp: 1_000_000, body: body, header: header, secret: secret, now: at))
        #expect(!WebhookSignature.verify(id: "id-2", timestamp: 1_000_000, body: body, header: header, secret: secret, now: at))
        #expect(!WebhookSignature.verify(id: "id-1", timestamp: 1_000_000, body: body + [0x20], header: header, secret: secret, now: at))
        #expect(
            !WebhookSignature.verify(
                id: "id-1", timestamp: 1_000_000, body: body, header: header, secret: secret, now: Date(timeIntervalSince1970: 1_000_301)))
    }

    @Test func refusesSecretsThatAreNotStandardWebhooksSecrets() {
        for text in ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not base64!", "whsec_" + Data(count: 8).base64EncodedString(),
            "whsec_" + Data(count: 65).base64EncodedString()]
        {
            #expect(throws: ForwardError(.secret, "")) { try WebhookSecret(text) }
        }
        #expect((try? WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n"))?.description == "whsec_••••")
    }

    @Test func takesHTTPSAndLoopbackHTTPOnly() throws {
        #expect(try ForwardTarget("https://hooks.example.com/apple").url == "https://hooks.example.com/apple")
        #expect(try ForwardTarget("http://127.0.0.1:8080/in").url == "http://127.0.0.1:8080/in")
        #expect(try ForwardTarget("http://[::1]:8080/in").url == "http://[::1]:8080/in")
        for text in ["http://hooks.example.com/", "ftp://127.0.0.1/", "https://user:pw@hooks.example.com/", "not a url", "https:///x"] {
            #expect(throws: ForwardError(.url, "")) { try ForwardTarget(text) }
        }
    }
}
