import LocalFiles
import ReceiptCore
import ReceiptDemo
import Testing

/// The demo a first `dash` and `inspect --demo` show: one input of each kind a person meets,
/// compiled in, each decoding as the kind its name says.
@Suite struct DemoInputsTests {
    @Test func eachDemoInputDecodesAsTheKindItsNameSays() throws {
        let expected: [String: ReceiptFormat] = [
            "ios6-transaction.b64": .legacy,
            "notification-v2-expired.jws": .jwsNotification,
            "production-subscriptions.b64": .pkcs7,
            "sandbox-weekly-intro.b64": .pkcs7,
            "verify-response.json": .verifyResponse,
            "xcode-storekit-test.der": .pkcs7,
        ]
        let inputs = InputFiles.demo()
        #expect(inputs.map(\.source) == expected.keys.sorted().map { "demo/\($0)" })
        for input in inputs {
            let name = String(input.source.dropFirst("demo/".count))
            let decoded = try ReceiptDecoder().decode(try input.result.get())
            #expect(decoded.format == expected[name], "\(name)")
        }
    }
}
