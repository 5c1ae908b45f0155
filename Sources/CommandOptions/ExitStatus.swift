import ArgumentParser

/// The exit statuses, one per kind of fault, the same from every command (docs/payloads.md,
/// "Exit statuses", lists them with examples).
public enum ExitStatus {
    /// 1: the command ran and the answer is no: an input could not be decoded or read, a look-up
    /// found nothing, Apple refused, a service or the audit database failed, doctor found a
    /// problem, reconciliation found notifications missing.
    public static let failed = ExitCode.failure

    /// 2: the dashboard was asked for where no terminal is.
    public static let noTerminal = ExitCode(2)

    /// 64 (EX_USAGE): the command line or a setting cannot be used, said before anything is
    /// sent: an unknown command, flag or value, and configuration: credentials or a key file,
    /// an `--api-profile` table, a `--ca-file`/`--root-ca`/`root_ca` file, read-only refusals.
    public static let usage = ExitCode.validationFailure

    /// 66 (EX_NOINPUT): the audit database a reading command names does not exist (`db copy
    /// --from`, `history`, `notifications`).
    public static let noInput = ExitCode(66)

    /// 128 + N: signal N (SIGINT, SIGTERM, SIGHUP) ended the command.
    public static func signal(_ number: Int32) -> ExitCode { ExitCode(128 + number) }
}
