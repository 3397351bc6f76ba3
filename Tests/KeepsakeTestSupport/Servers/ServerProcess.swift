import BackupCore
import Foundation
import KeepsakeSupport

#if canImport(Glibc)
import Glibc
#endif

/// A server the tests start as a child process and stop again, known by its pid.
///
/// The child is started with `posix_spawn`: standard input from /dev/null, standard output and
/// error appended to a log file, every other descriptor of the test process closed, signal
/// mask and dispositions reset. This type alone reaps it (`waitpid`), so after `stop()`,
/// `kill()` or `waitForExit` the pid is gone and the ports it listened on are free again.
/// `stop()` is idempotent and also runs from `deinit`.
public final class ServerProcess: Sendable {
    // MARK: Errors

    /// Starting, reaching or stopping the server failed; the text includes the tail of its log.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        public let description: String

        /// A failure with the given text.
        public init(_ description: String) {
            self.description = description
        }
    }

    // MARK: Identity

    /// A short name for messages ("weed master", "sshd").
    public let name: String
    /// The program's absolute path.
    public let executable: String
    /// The arguments after the program's name.
    public let arguments: [String]
    /// Where standard output and standard error go (appended).
    public let logFile: URL
    /// The child's process id; valid until the child is reaped, never signalled after that.
    public let pid: pid_t

    // MARK: State

    /// The child's `waitpid` status once reaped.
    private struct State {
        var waitStatus: Int32?
    }

    private let state = LockedValue(State())

    // MARK: Starting

    /// Starts `executable` with `arguments` and exactly `environment`, appending its output to
    /// `logFile` (created if missing), in `workingDirectory` (when given).
    public init(
        name: String,
        executable: String,
        arguments: [String],
        environment: [String: String],
        logFile: URL,
        workingDirectory: URL? = nil
    ) throws {
        self.name = name
        self.executable = executable
        self.arguments = arguments
        self.logFile = logFile
        guard access(executable, X_OK) == 0 else {
            throw Failure("\(name): \(executable) is not an executable file (\(String(cString: strerror(errno))))")
        }
        pid = try Self.spawn(
            executable: executable,
            arguments: arguments,
            environment: environment,
            logPath: logFile.path,
            workingDirectory: workingDirectory?.path
        )
    }

    /// The test process's environment without the variables `removing` names (exact names, or
    /// prefixes ending in `*`), with `setting` added on top.
    public static func inheritedEnvironment(
        removing: [String] = [],
        setting: [String: String] = [:]
    ) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for key in environment.keys {
            let removed = removing.contains { pattern in
                pattern.hasSuffix("*") ? key.hasPrefix(pattern.dropLast()) : key == pattern
            }
            if removed { environment[key] = nil }
        }
        environment.merge(setting) { _, new in new }
        return environment
    }

    // MARK: Waiting

    /// Waits until something accepts TCP connections on 127.0.0.1:`port`; throws when the child
    /// exits first or `timeout` passes, with the tail of its log.
    public func waitForPort(_ port: UInt16, timeout: Duration = .seconds(60)) throws {
        try waitUntil("accepts connections on 127.0.0.1:\(port)", timeout: timeout) {
            Self.acceptsConnections(port: port)
        }
    }

    /// Polls `condition` every 50 ms until it holds; throws when the child exits first or
    /// `timeout` passes, naming `what` was awaited, with the tail of the log.
    public func waitUntil(
        _ what: String,
        timeout: Duration = .seconds(60),
        condition: () throws -> Bool
    ) throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let status = reap(blocking: false) {
                throw Failure("\(name) (pid \(pid)) \(Self.describe(waitStatus: status)) before it \(what)"
                    + logTailMessage())
            }
            if try condition() { return }
            guard ContinuousClock.now < deadline else {
                throw Failure("\(name) (pid \(pid)) still not ready after \(timeout): it never \(what)"
                    + logTailMessage())
            }
            usleep(50_000)
        }
    }

    /// Whether the child is still running (one that has exited is reaped here).
    public var isRunning: Bool {
        reap(blocking: false) == nil
    }

    /// The `waitpid` status once the child has been reaped, else nil.
    public var waitStatus: Int32? {
        state.withLock { $0.waitStatus }
    }

    // MARK: Stopping

    /// Stops the child: SIGCONT (a paused child cannot act on SIGTERM), SIGTERM, then SIGKILL if
    /// it is still there after `grace`; then reaps it. Returns the `waitpid` status. Idempotent.
    @discardableResult
    public func stop(grace: Duration = .seconds(15)) -> Int32 {
        guard isRunning else { return waitStatus ?? 0 }
        send(SIGCONT)
        send(SIGTERM)
        if let status = waitForExit(timeout: grace) { return status }
        send(SIGKILL)
        return reap(blocking: true) ?? 0
    }

    /// Stops several children at once (SIGTERM to all, then one shared grace period, then
    /// SIGKILL to those left), so slow exits overlap instead of adding up.
    public static func stopAll(_ processes: [ServerProcess], grace: Duration = .seconds(15)) {
        let running = processes.filter(\.isRunning)
        for process in running {
            process.send(SIGCONT)
            process.send(SIGTERM)
        }
        let deadline = ContinuousClock.now + grace
        var left = running
        while !left.isEmpty && ContinuousClock.now < deadline {
            usleep(20_000)
            left = left.filter(\.isRunning)
        }
        for process in left {
            process.send(SIGKILL)
            _ = process.reap(blocking: true)
        }
    }

    /// Kills the child with SIGKILL at once (a crash, for fault tests) and reaps it.
    public func kill() {
        send(SIGKILL)
        _ = reap(blocking: true)
    }

    /// Waits up to `timeout` for the child to exit by itself; returns its `waitpid` status, or
    /// nil if it is still running.
    public func waitForExit(timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = reap(blocking: false) { return status }
            usleep(20_000)
        }
        return reap(blocking: false)
    }

    deinit {
        stop()
    }

    // MARK: Fault injection

    /// Freezes the child with SIGSTOP (it keeps its ports but answers nothing) and waits until
    /// it is stopped.
    public func pause() {
        state.withLock { state in
            guard state.waitStatus == nil, Glibc.kill(pid, SIGSTOP) == 0 else { return }
            var status: Int32 = 0
            while true {
                let result = waitpid(pid, &status, WUNTRACED)
                if result == pid && Self.isStopped(status) { return }
                if result == pid { state.waitStatus = status; return }
                if result < 0 && errno == EINTR { continue }
                return
            }
        }
    }

    /// Lets a paused child run again (SIGCONT).
    public func resume() {
        send(SIGCONT)
    }

    /// Sends `signal` to the child unless it has already been reaped (its pid could be reused).
    public func send(_ signal: Int32) {
        state.withLock { state in
            guard state.waitStatus == nil else { return }
            _ = Glibc.kill(pid, signal)
        }
    }

    // MARK: Log

    /// The last `lines` lines of the log file.
    public func logTail(lines: Int = 30) -> String {
        guard let handle = try? FileHandle(forReadingFrom: logFile) else { return "" }
        defer { try? handle.close() }
        let size = (try? handle.seekToEnd()) ?? 0
        let start = size > 32_768 ? size - 32_768 : 0
        guard (try? handle.seek(toOffset: start)) != nil, let data = try? handle.readToEnd() else { return "" }
        let text = String(decoding: data, as: UTF8.self)
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// The log's tail as a message suffix.
    private func logTailMessage() -> String {
        "; the last lines of its log \(logFile.path):\n\(logTail())"
    }

    // MARK: Wait statuses

    /// "exited with status 1", "was killed by signal 9".
    public static func describe(waitStatus status: Int32) -> String {
        let low = status & 0x7f
        if low == 0 { return "exited with status \((status >> 8) & 0xff)" }
        if isStopped(status) { return "was stopped by signal \((status >> 8) & 0xff)" }
        return "was killed by signal \(low)"
    }

    /// WIFSTOPPED.
    private static func isStopped(_ status: Int32) -> Bool {
        status & 0xff == 0x7f
    }

    // MARK: Internals

    /// Reaps the child if it has exited (waiting for that when `blocking`); its status, or nil
    /// while it runs. A child reaped elsewhere (ECHILD) counts as gone.
    private func reap(blocking: Bool) -> Int32? {
        state.withLock { state in
            if let status = state.waitStatus { return status }
            var status: Int32 = 0
            while true {
                let result = waitpid(pid, &status, blocking ? 0 : WNOHANG)
                if result == pid {
                    state.waitStatus = status
                    return status
                }
                if result < 0 && errno == EINTR { continue }
                if result < 0 && errno == ECHILD {
                    state.waitStatus = 0
                    return 0
                }
                return nil
            }
        }
    }

    /// Whether a TCP connection to 127.0.0.1:`port` is accepted right now.
    public static func acceptsConnections(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// posix_spawn with the file actions and attributes described on the type.
    private static func spawn(
        executable: String,
        arguments: [String],
        environment: [String: String],
        logPath: String,
        workingDirectory: String?
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }

        var code = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if code == 0 {
            code = posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        }
        if code == 0 { code = posix_spawn_file_actions_adddup2(&actions, 1, 2) }
        if code == 0 { code = closeInheritedDescriptors(&actions) }
        if code == 0, let workingDirectory { code = changeDirectory(&actions, to: workingDirectory) }
        guard code == 0 else {
            throw Failure("posix_spawn file actions for \(executable): \(String(cString: strerror(code)))")
        }

        // Test runners ignore or block some signals, and both survive exec: undo that.
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM] {
            sigaddset(&defaults, signal)
        }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) }
        let envp = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") }
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv + [nil], envp + [nil])
        guard spawned == 0 else {
            throw Failure("posix_spawn \(executable): \(String(cString: strerror(spawned)))")
        }
        return pid
    }

    /// Adds "close every descriptor from 3 on": glibc's posix_spawn_file_actions_addclosefrom_np
    /// (2.34 and later, not in Swift's Glibc module, so found with dlsym), or else one close
    /// action per descriptor open now. Without this the server would keep, say, the write end
    /// of another test's pipe open, and that test would never see end of file.
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) -> Int32 {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = libcSymbol("posix_spawn_file_actions_addclosefrom_np") {
            let closeFrom = unsafeBitCast(symbol, to: CloseFrom.self)
            return closeFrom(&actions, 3)
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in names.compactMap(Int32.init) where descriptor > 2 {
            // glibc ignores a close action whose descriptor is no longer open by then.
            let code = posix_spawn_file_actions_addclose(&actions, descriptor)
            if code != 0 { return code }
        }
        return 0
    }

    /// Adds a chdir action (glibc's posix_spawn_file_actions_addchdir_np, found with dlsym).
    private static func changeDirectory(_ actions: inout posix_spawn_file_actions_t, to path: String) -> Int32 {
        typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
        guard let symbol = libcSymbol("posix_spawn_file_actions_addchdir_np") else { return ENOSYS }
        let changeDirectory = unsafeBitCast(symbol, to: ChangeDirectory.self)
        return changeDirectory(&actions, path)
    }

    /// A function of the C library by name (it stays loaded, so the address stays valid).
    private static func libcSymbol(_ name: String) -> UnsafeMutableRawPointer? {
        guard let handle = dlopen(nil, RTLD_NOW) else { return nil }
        defer { dlclose(handle) }
        return dlsym(handle, name)
    }
}
