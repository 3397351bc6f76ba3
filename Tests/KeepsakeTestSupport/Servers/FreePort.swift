import BackupCore
import Foundation
import KeepsakeSupport

#if canImport(Glibc)
import Glibc
#endif

/// Free TCP ports on 127.0.0.1 for servers the tests start.
///
/// A port is found by binding a socket to port 0 on 127.0.0.1 and reading back the port the
/// kernel chose; the socket is closed before the port is handed out, so the server can bind
/// it. Several ports asked for at once are distinct (every socket stays open until all are
/// chosen), and no port is handed out twice while its holder lives: not in one test process,
/// and not across the test processes that run side by side (Scripts/lib/run-tests runs a test
/// class per process), which record the ports they hand out in `claimsFolder`. So servers
/// started at the same moment by different test classes do not collide.
public enum FreePort {
    // MARK: Errors

    /// A socket call failed while looking for a free port.
    public struct Failure: Error, CustomStringConvertible {
        /// What failed, with the system's error text.
        public let description: String
    }

    // MARK: Picking

    /// One free TCP port on 127.0.0.1.
    public static func pick() throws -> UInt16 {
        try pick(1)[0]
    }

    /// `count` distinct free TCP ports on 127.0.0.1.
    public static func pick(_ count: Int) throws -> [UInt16] {
        precondition(count > 0, "ask for at least one port")
        var sockets: [Int32] = []
        defer { sockets.forEach { _ = close($0) } }
        var ports: [UInt16] = []
        var attempts = 0
        while ports.count < count {
            attempts += 1
            guard attempts <= count + 200 else {
                throw Failure(description: "no free TCP port on 127.0.0.1 after \(attempts - 1) tries")
            }
            let (socket, port) = try bindEphemeral()
            sockets.append(socket)
            // Kept open either way: a port refused here must not come back in this call.
            if claim(port) { ports.append(port) }
        }
        return ports
    }

    /// `count` pairs of free ports `(p, p + offset)` on 127.0.0.1, all distinct. SeaweedFS
    /// dials some gRPC ports at "HTTP port + 10000" whatever it was told (weed mini's admin
    /// worker does), so its servers get pairs whose gRPC port is exactly there.
    public static func pickPairs(_ count: Int, offset: UInt16) throws -> [(UInt16, UInt16)] {
        precondition(count > 0 && offset > 0, "ask for at least one pair, with a positive offset")
        var sockets: [Int32] = []
        defer { sockets.forEach { _ = close($0) } }
        var pairs: [(UInt16, UInt16)] = []
        var attempts = 0
        while pairs.count < count {
            attempts += 1
            guard attempts <= 50 * count + 500 else {
                throw Failure(description: "no free pair of TCP ports \(offset) apart on 127.0.0.1 after \(attempts - 1) tries")
            }
            let (socket, port) = try bindEphemeral()
            sockets.append(socket)
            guard port <= UInt16.max - offset, let partner = try? bind(port + offset) else { continue }
            sockets.append(partner)
            if claim(port) && claim(port + offset) { pairs.append((port, port + offset)) }
        }
        return pairs
    }

    // MARK: Checking

    /// Whether a TCP listener could bind `port` on 127.0.0.1 right now (nothing holds it).
    public static func isFree(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var reuse: Int32 = 1
        // As a server would: SO_REUSEADDR lets a port whose old connections linger in TIME_WAIT count as free.
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    // MARK: Claims across processes

    /// Where test processes record the ports they have handed out: a file named by the port,
    /// holding the pid of the process that holds it. A claim lasts as long as its process: at
    /// exit a process removes its own, and a claim whose process is gone is taken over.
    public static let claimsFolder = "/tmp/keepsake-test-ports"

    /// Records `port` as this process's in `folder`; false when a live process other than this
    /// one holds it. Claims are made one at a time, under an flock of `folder/.lock`, so that
    /// two processes never both take over the same stale claim. Where the folder cannot be
    /// used (another user's, say), only this process's own record protects its ports.
    public static func claimAcrossProcesses(_ port: UInt16, in folder: String = claimsFolder) -> Bool {
        if mkdir(folder, 0o1777) == 0 { chmod(folder, 0o1777) }  // any user's tests may claim
        let lock = open(folder + "/.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o666)
        guard lock >= 0 else { return true }
        defer { close(lock) }
        guard flock(lock, LOCK_EX) == 0 else { return true }
        let path = folder + "/" + String(port)
        if let text = try? String(contentsOfFile: path, encoding: .utf8),
           let holder = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)),
           holder != getpid(), holder > 0, kill(holder, 0) == 0 || errno == EPERM {
            return false
        }
        _ = unlink(path)  // a claim of a process that is gone, or none
        let file = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o644)
        guard file >= 0 else { return true }
        let text = Array("\(getpid())\n".utf8)
        _ = text.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
        close(file)
        return true
    }

    /// Removes the claims this process made (at its exit).
    private static func releaseClaims() {
        let me = getpid()
        for port in handedOut.withLock({ $0 }) {
            let path = claimsFolder + "/" + String(port)
            if let text = try? String(contentsOfFile: path, encoding: .utf8),
               Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) == me {
                _ = unlink(path)
            }
        }
    }

    // MARK: Internals

    /// Ports already handed out in this process.
    private static let handedOut = LockedValue<Set<UInt16>>([])

    /// Whether the exit handler that releases this process's claims is registered.
    private static let releaseRegistered = LockedValue(false)

    /// Records `port` as handed out, here and across processes; false if it already was.
    private static func claim(_ port: UInt16) -> Bool {
        releaseRegistered.withLock { registered in
            guard !registered else { return }
            registered = true
            atexit { FreePort.releaseClaims() }
        }
        return handedOut.withLock { handed in
            guard !handed.contains(port), claimAcrossProcesses(port) else { return false }
            handed.insert(port)
            return true
        }
    }

    /// A socket bound to 127.0.0.1 on a port the kernel chose (still open), and that port.
    private static func bindEphemeral() throws -> (Int32, UInt16) {
        let fd = try bind(0)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard named else {
            let text = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "getsockname(): \(text)")
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// A socket bound to 127.0.0.1:`port` (0: one the kernel chooses), still open.
    private static func bind(_ port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket(): \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard bound else {
            let text = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "bind() to 127.0.0.1:\(port): \(text)")
        }
        return fd
    }
}
