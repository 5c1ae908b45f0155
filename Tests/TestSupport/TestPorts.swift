import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Loopback ports for tests.
package enum TestPorts {
    /// A loopback port that refuses every connection for the rest of the test process: bound
    /// and never listened on, so the kernel answers a connection with a reset, and nothing else
    /// (another test, another run beside this one) can bind it meanwhile. The socket is kept
    /// open on purpose until the process ends.
    package static func refusing() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        return bound(fd)
    }

    /// A loopback port free a moment ago: bound, then closed, for a test that starts a server
    /// on it later (a downstream that comes back). Another process may take it meanwhile: for a
    /// refused connection use ``refusing()``.
    package static func closed() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        return bound(fd)
    }

    /// Binds `fd` to a port the kernel picks on 127.0.0.1 and says which.
    private static func bound(_ fd: Int32) -> Int {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
