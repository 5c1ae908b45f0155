/// A listener that could not start because another process holds its port (EADDRINUSE): the
/// receiver's, the dashboard's embedded one, the simulator's. Said with the port and what to
/// do, naming the flag that chooses another.
public struct PortInUseError: Error, CustomStringConvertible, Sendable {
    public var port: Int
    /// The flag that sets this port (`--port`, `--metrics-port`, `--receive`).
    public var flag: String

    public init(port: Int, flag: String) {
        self.port = port
        self.flag = flag
    }

    public var description: String { "port \(port) is in use: stop the other process or choose another with \(flag)" }
}
