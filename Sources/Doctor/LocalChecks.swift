import AuditTrail
import Foundation
import AppStoreAPI
import LocalFiles
import ReceiptCore

/// A secret's file: only its owner may read it.
enum FileModeCheck {
    static func privateFile(_ id: String, path: String, what: String) -> DoctorCheck {
        switch FilePermissions.readers(path: path) {
        case .failure(let error):
            return DoctorCheck(id, .failed, "\(what) \(path) cannot be examined (\(error.reason))")
        case .success(let readers):
            if let others = readers.others {
                return DoctorCheck(id, .failed, "\(what) \(path) is readable by \(others) (mode \(readers.octalMode))", fix: "chmod 600 \(path)")
            }
            return DoctorCheck(id, .ok, "\(what) \(path) is readable by its owner only (mode \(readers.octalMode))")
        }
    }
}

/// The shared secret for verifyReceipt: from `--shared-secret-file` or the environment.
enum SharedSecretCheck {
    static func run(file: String?, environment: [String: String]) -> [DoctorCheck] {
        let id = "shared-secret"
        guard let file else {
            if let secret = try? SharedSecret.load(file: nil, environment: environment, warn: { _ in }) {
                return [shape(secret, source: SharedSecret.environmentVariable)]
            }
            return [
                DoctorCheck(
                    id, .skipped, "no shared secret set up (verify and watch --verify need it for subscription receipts)",
                    fix: "give --shared-secret-file FILE (mode 600) or RECEIPTDASH_SHARED_SECRET")
            ]
        }
        let secret: SharedSecret?
        do {
            secret = try SharedSecret.load(file: file, environment: [:], warn: { _ in })
        } catch {
            return [DoctorCheck(id, .failed, "\(error)", fix: "write the app-specific shared secret from App Store Connect into \(file)")]
        }
        guard let secret else { return [] }
        return [shape(secret, source: file), FileModeCheck.privateFile("shared-secret-file", path: file, what: "the shared secret file")]
    }

    /// App Store Connect's secrets are 32 hexadecimal characters; anything else is a file that
    /// holds more than the secret (a `KEY=` line, quotes).
    static func shape(_ secret: SharedSecret, source: String) -> DoctorCheck {
        let looksRight = secret.value.count == 32 && secret.value.allSatisfy(\.isHexDigit)
        guard looksRight else {
            return DoctorCheck(
                "shared-secret", .failed,
                "the shared secret from \(source) (\(secret.masked), \(secret.value.count) characters) is not the 32 hexadecimal characters App Store Connect gives",
                fix: "keep only the secret in it (no name, quotes or spaces)")
        }
        return DoctorCheck("shared-secret", .ok, "the shared secret from \(source) (\(secret.masked)) has App Store Connect's shape")
    }
}

/// The audit trail `--db` names (or the default file): it opens, is at the current schema, can
/// be written, and (SQLite) only its owner may read it. Nothing is created or migrated.
enum AuditStoreCheck {
    static func run(
        _ text: String?, environment: [String: String],
        open: @Sendable (AuditDatabase) async throws(AuditDatabaseError) -> any AuditBackend
    ) async -> [DoctorCheck] {
        let id = "audit.store"
        let database: AuditDatabase
        do {
            database = try AuditDatabase(text ?? AuditDatabase.defaultPath(environment: environment))
        } catch {
            return [DoctorCheck(id, .failed, error.reason, fix: "give --db a file path or a postgres:// URL")]
        }
        if case .sqlite(let path) = database, !FileManager.default.fileExists(atPath: path) {
            let folder = PathNames.parent(of: path)
            let writable = nearestFolder(folder).map { access($0, W_OK) == 0 } ?? false
            return [
                writable
                    ? DoctorCheck(id, .ok, "no audit trail at \(path) yet: it is made (mode 600) on first use")
                    : DoctorCheck(id, .failed, "no audit trail at \(path), and \(folder) cannot be made or written", fix: "give --db a path you may write")
            ]
        }
        let store: any AuditBackend
        do {
            store = try await open(database)
        } catch {
            return [DoctorCheck(id, .failed, error.reason, fix: "run `receiptdash db migrate --db …` when it is older; else check the path or URL")]
        }
        var checks: [DoctorCheck] = []
        let current = store.schemaVersions.last(where: { $0.hasPrefix("v") }) ?? "?"
        switch database {
        case .sqlite(let path):
            let missing = (try? store.missingMigrations()) ?? nil
            if let missing, !missing.isEmpty {
                checks.append(
                    DoctorCheck(
                        id, .failed, "\(path) is older than this receiptdash (missing \(missing.joined(separator: ", ")))",
                        fix: "receiptdash db migrate --db \(path)"))
            } else {
                checks.append(DoctorCheck(id, .ok, "\(path) opens at the current schema (\(current))"))
            }
            checks.append(
                access(path, W_OK) == 0 && access(PathNames.parent(of: path), W_OK) == 0
                    ? DoctorCheck("audit.writable", .ok, "\(path) and its folder can be written")
                    : DoctorCheck(
                        "audit.writable", .failed, "\(path) or its folder cannot be written by this user", fix: "check the file's and folder's owner and mode"))
            checks.append(FileModeCheck.privateFile("audit.file-mode", path: path, what: "the audit trail"))
        case .postgres:
            checks.append(DoctorCheck(id, .ok, "\(store.location) opens at the current schema (\(current))"))
        }
        await store.close()
        return checks
    }

    /// The folder itself, or the nearest parent that exists (what would be made under it).
    static func nearestFolder(_ path: String) -> String? {
        var folder = path.isEmpty ? "." : path
        while !FileManager.default.fileExists(atPath: folder) {
            let parent = PathNames.parent(of: folder)
            if parent == folder || parent.isEmpty { return nil }
            folder = parent
        }
        return folder
    }
}
