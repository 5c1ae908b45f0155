import Foundation
import LocalFiles
import Testing
import TestSupport

/// `inspect --storekit-cert`: Xcode's certificate as DER, or PEM as Xcode and openssl save it.
@Suite struct StoreKitCertificateFileTests {
    @Test func derAndPEMGiveTheSameBytes() throws {
        let folder = TemporaryFolder("storekit").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let der: [UInt8] = [0x30, 0x03, 0x02, 0x01, 0x05, 0xFF, 0x00]
        try Data(der).write(to: URL(fileURLWithPath: folder + "/cert.der"))
        let pem = "-----BEGIN CERTIFICATE-----\n\(Data(der).base64EncodedString())\n-----END CERTIFICATE-----\n"
        try Data(pem.utf8).write(to: URL(fileURLWithPath: folder + "/cert.pem"))
        #expect(try StoreKitCertificateFile.read(folder + "/cert.der") == der)
        #expect(try StoreKitCertificateFile.read(folder + "/cert.pem") == der)
        #expect(try StoreKitCertificateFile.read(folder + "/missing.der") == nil)
        try Data("-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n".utf8).write(to: URL(fileURLWithPath: folder + "/bad.pem"))
        #expect(throws: (any Error).self) { try StoreKitCertificateFile.read(folder + "/bad.pem") }
    }
}
