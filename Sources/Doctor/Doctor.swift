import AppStoreClients
import AuditTrail
import Foundation
import NIOSSL
import OutboundHTTP
import PlainWords
import RetryEngine

/// `receiptdash doctor`: checks a set-up and says what to fix, one line each. Every check is
/// read-only: nothing is created, migrated or sent but one made-up look-up per environment.
public struct Doctor: Sendable {
    /// The API set-up; its checks are skipped when no credential is named.
    public var api: APISetup
    /// `--db`, else the default audit trail.
    public var database: String?
    public var sharedSecretFile: String?
    /// `--receiver URL`: checked only when given.
    public var receiverURL: String?
    /// Extra trusted roots for the API hosts and the receiver (`--ca-file`).
    public var caFile: String?
    public var environment: [String: String]
    public var clock: ServiceClock
    /// Opens the audit trail a `--db` names, read-only (the program wires the stores).
    public var openStore: @Sendable (AuditDatabase) async throws(AuditDatabaseError) -> any AuditBackend

    public init(
        api: APISetup, database: String?, sharedSecretFile: String?, receiverURL: String?, caFile: String?,
        environment: [String: String], clock: ServiceClock = .system,
        openStore: @escaping @Sendable (AuditDatabase) async throws(AuditDatabaseError) -> any AuditBackend
    ) {
        self.api = api
        self.database = database
        self.sharedSecretFile = sharedSecretFile
        self.receiverURL = receiverURL
        self.caFile = caFile
        self.environment = environment
        self.clock = clock
        self.openStore = openStore
    }

    /// Runs every check, in the order printed: the API, the clock, the audit trail, the shared
    /// secret, the receiver, the terminal.
    public func run() async -> DoctorReport {
        var checks: [DoctorCheck] = []
        var roots: [NIOSSLCertificate] = []
        if let caFile {
            do {
                roots = try OutboundHTTPClient.loadTrustRoots(file: caFile)
                checks.append(DoctorCheck("ca-file", .ok, "\(caFile): \(CountNoun.root.count(roots.count))"))
            } catch {
                checks.append(DoctorCheck("ca-file", .failed, "\(error)", fix: "give --ca-file a PEM or DER certificate file"))
            }
        }
        var api = api
        api.extraTrustRoots = roots
        checks += await APIChecks.run(api, clock: clock)
        checks += await AuditStoreCheck.run(database, environment: environment, open: openStore)
        checks += SharedSecretCheck.run(file: sharedSecretFile, environment: environment)
        if let receiverURL {
            checks += await ReceiverCheck.run(receiverURL, extraTrustRoots: roots, now: clock.now())
        } else {
            checks.append(DoctorCheck("receiver", .skipped, "no receiver named", fix: "add --receiver https://… to check one"))
        }
        checks += TerminalCheck.run(.current(environment: environment))
        return DoctorReport(checks: checks)
    }
}
