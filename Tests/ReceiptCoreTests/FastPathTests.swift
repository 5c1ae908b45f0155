import Foundation
import ReceiptRendering
import Testing
@testable import ReceiptCore
@testable import ReceiptTrust
import SwiftASN1
import X509

/// The DER fast paths and the swift-asn1 path must agree exactly.
@Suite struct FastPathTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("../shared/corpus/pkcs7").standardizedFileURL

    /// `negative`: a file the corpus manifest marks as not a receipt (both paths must refuse it,
    /// with the same error code).
    func compare(_ bytes: [UInt8], _ name: String, negative: Bool = false) {
        var slow = ReceiptDecoder()
        slow.fastPaths = false
        let a = Result { try ReceiptDecoder().decode(bytes) }
        let b = Result { try slow.decode(bytes) }
        switch (a, b) {
        case (.success(let x), .success(let y)): #expect(x == y, "\(name): fast and slow paths differ")
        case (.failure(let x), .failure(let y)):
            if !negative { Issue.record("\(name): neither path decoded it: \(x)") }
            #expect((x as? ReceiptDecodingError)?.code == (y as? ReceiptDecodingError)?.code, "\(name): the paths refuse it differently")
        default: Issue.record("\(name): one path decoded, the other did not: \(a) / \(b)")
        }
    }

    @Test(arguments: ["sandbox-2023.der", "xcode.der"])
    func fixtures(name: String) throws {
        compare(try Fixture.bytes(name), name)
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: corpus.path), "needs ../shared/corpus beside the package (the team's corpus); core tests use the copies in Tests/"))
    func everyCorpusReceipt() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).filter { $0.hasSuffix(".der") }
        #expect(names.count >= 30)
        // MANIFEST.tsv: relative_path, kind, …; kind "pkcs7-negative" marks a file that is not a receipt.
        let manifest = try String(contentsOf: Self.corpus.deletingLastPathComponent().appendingPathComponent("MANIFEST.tsv"), encoding: .utf8)
        let negative = Set(manifest.split(separator: "\n").compactMap { line -> String? in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count > 1, fields[1].hasSuffix("negative") else { return nil }
            return String(fields[0].split(separator: "/").last ?? "")
        })
        #expect(!negative.isEmpty)
        for name in names {
            compare([UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent(name))), name, negative: negative.contains(name))
        }
    }

    /// A name's text without swift-certificates' per-byte escaping work must be its text all
    /// the same: plain, every character RFC 4514 escapes, leading and trailing spaces, `#`,
    /// non-ASCII, empty, each as UTF8String, PrintableString and IA5String where it can be one,
    /// and a value of another ASN.1 type.
    @Test func nameAttributeTextIsTheLibrarysDescription() throws {
        let texts = [
            "Apple Worldwide Developer Relations Certification Authority", "G5", "", "a,b", "a+b", "say \"hi\"",
            "back\\slash", "<tag>", "semi;colon", " leading", "#hash", "trailing ", "  ", "mid # and  spaces", "é ✓ 😀",
            "Mac App Store and iTunes Store Receipt Signing",
        ]
        var values: [RelativeDistinguishedName.Attribute.Value] = []
        for text in texts {
            values.append(.init(utf8String: text))
            if let printable = try? RelativeDistinguishedName.Attribute.Value(printableString: text) { values.append(printable) }
            if let ia5 = try? RelativeDistinguishedName.Attribute.Value(ia5String: text) { values.append(ia5) }
        }
        values.append(.init(asn1Any: try ASN1Any(derEncoded: [0x02, 0x01, 0x05])))
        #expect(values.count > 2 * texts.count)
        for value in values {
            #expect(value.escapedText == value.description, "\(value.description)")
        }
        #expect(RelativeDistinguishedName.Attribute.Value(utf8String: "a,b").escapedText == "a\\,b")
    }

    /// A whole name's text, written without the library's per-byte work, is its description: on
    /// every certificate of the fixture receipts, the bundled roots, and names built with each
    /// attribute kind, an unnamed OID, a multi-valued RDN and text that needs escaping.
    @Test func distinguishedNameTextIsTheLibrarysDescription() throws {
        var names: [DistinguishedName] = []
        for fixture in ["sandbox-2023.der", "sandbox-g5.der", "xcode.der"] {
            for der in try PKCS7SignedData(berEncoded: try Fixture.bytes(fixture)).certificates {
                let certificate = try Certificate(derEncoded: der)
                names += [certificate.subject, certificate.issuer]
            }
        }
        names += TrustAnchors.apple.roots.flatMap { [$0.subject, $0.issuer] }
        #expect(names.count >= 12)
        names.append(
            try DistinguishedName {
                CountryName("US")
                StateOrProvinceName("CA")
                LocalityName("Cupertino")
                OrganizationName("Apple, Inc.")
                OrganizationalUnitName(" G5 ")
                CommonName("#1 <test>; \"quoted\" + more")
                StreetAddress("1 Infinite Loop")
                DomainComponent("example")
                EmailAddress("a@example.com")
            })
        names.append(
            DistinguishedName([
                RelativeDistinguishedName([
                    .init(type: .RDNAttributeType.commonName, utf8String: "two"),
                    .init(type: [2, 5, 4, 5], utf8String: "serial 42"),
                ]),
                RelativeDistinguishedName(.init(type: [1, 2, 3, 4], utf8String: "unnamed")),
            ]))
        names.append(DistinguishedName())
        for name in names {
            #expect(name.text == name.description)
        }
        #expect(names.last(where: { !$0.isEmpty })?.text == "1.2.3.4=unnamed,CN=two+2.5.4.5=serial 42")
    }

    /// The summary cache hashes a certificate's length and last bytes only: a copy altered before
    /// them (here its serial number) shares the bucket and must still be summarised as itself.
    @Test func aCertificateAlteredBeforeItsSignatureIsSummarisedAsItself() throws {
        let der = try #require(try PKCS7SignedData(berEncoded: try Fixture.bytes("sandbox-2023.der")).certificates.first)
        let serial = Array(try Certificate(derEncoded: der).serialNumber.bytes)
        let at = try #require((0...(der.count - serial.count)).first { der[$0..<($0 + serial.count)].elementsEqual(serial) })
        var altered = der
        altered[at + serial.count - 1] ^= 0x01
        #expect(altered.suffix(64) == der.suffix(64) && altered.count == der.count)
        let original = try #require(CertificateInfo.cached(der: der))
        let other = try #require(CertificateInfo.cached(der: altered))
        #expect(original.serial == Hex.encode(serial, separator: ":"))
        #expect(other.serial != original.serial)
        #expect(other.subject == original.subject)
        #expect(CertificateInfo.cached(der: der)?.serial == original.serial)
        #expect(CertificateInfo.cached(der: altered)?.serial == other.serial)
    }

    /// Long keys are hashed on their length and ends only (``hashSample``): keys alike there
    /// share a bucket and are told apart by their bytes. A JWS chain key with a certificate
    /// altered in its middle is another key, and a table keeps both.
    @Test func sampledKeysAlikeAtTheirEndsStayApart() throws {
        let der = try #require(try PKCS7SignedData(berEncoded: try Fixture.bytes("sandbox-2023.der")).certificates.first)
        var altered = der
        altered[der.count / 2] ^= 0x01
        func sample(_ bytes: [UInt8], head: Int, tail: Int) -> Int {
            var hasher = Hasher()
            hashSample(bytes[...], head: head, tail: tail, into: &hasher)
            return hasher.finalize()
        }
        #expect(sample(der, head: 256, tail: 64) == sample(altered, head: 256, tail: 64))
        #expect(sample(der, head: der.count, tail: 0) != sample(altered, head: der.count, tail: 0))
        #expect(sample(Array(der.prefix(100)), head: 64, tail: 64) != sample(Array(der.prefix(101)), head: 64, tail: 64))
        let anchors = TrustAnchors.apple.fingerprint
        let one = TrustCache.CertificateChainKey(anchors: anchors, certificates: [der])
        let two = TrustCache.CertificateChainKey(anchors: anchors, certificates: [altered])
        #expect(one.hashValue == two.hashValue)
        #expect(one != two)
        let table = [one: 1, two: 2]
        #expect(table.count == 2 && table[one] == 1 && table[two] == 2)
        #expect(TrustCache.CertificateChainKey(anchors: anchors, certificates: [der]) == one)
    }

    /// The signer's issuer name read through the cache's one-entry memo is the name its DER
    /// encodes, whichever name was read before it; DER that is not a name gives none.
    @Test func aRememberedSignerIssuerIsTheNameItsBytesEncode() throws {
        let signed = try PKCS7SignedData(berEncoded: try Fixture.bytes("sandbox-2023.der"))
        let apple = try #require(signed.signerInfos.first).issuerDER
        let other = try #require(try PKCS7SignedData(berEncoded: try Fixture.bytes("xcode.der")).signerInfos.first).issuerDER
        func read(_ der: [UInt8]) throws -> DistinguishedName { try DistinguishedName(derEncoded: try DER.parse(der)) }
        #expect(try read(apple) != read(other))
        let cache = TrustCache()
        for der in [apple, apple, other, apple, other, other] {
            #expect(try cache.signerIssuer(der) == read(der))
        }
        #expect(cache.signerIssuer(Array(apple.prefix(5))) == nil)
        #expect(try cache.signerIssuer(apple) == read(apple))
    }
}

