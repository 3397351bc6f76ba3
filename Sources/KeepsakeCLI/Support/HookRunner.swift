import BackupCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a profile's `before` or `after` command with `/bin/sh -c`.
///
/// The command's standard input is `/dev/null`; its standard output and standard error both
/// go to Keepsake's standard error, so `keepsake run` keeps standard output for its own
/// results. Signal dispositions are reset (Keepsake ignores SIGPIPE; the command must not).
/// The command runs in a process group of its own; when SIGINT or SIGTERM reaches Keepsake
/// while the command runs, that group gets SIGTERM and Keepsake waits for the command to end.
enum HookRunner {
    // MARK: Outcome

    /// How a command ended.
    enum Outcome: Sendable, Equatable {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it.
        case signaled(Int32)
        /// It could not be started.
        case notStarted(String)

        /// True for exit status 0.
        var succeeded: Bool { self == .exited(0) }

        /// "exit status 3", "signal 15 (Terminated)", "could not start: …".
        var description: String {
            switch self {
            case .exited(let status): return "exit status \(status)"
            case .signaled(let signal):
                let name = strsignal(signal).map { String(cString: $0) } ?? "unknown signal"
                return "signal \(signal) (\(name))"
            case .notStarted(let reason): return "could not start: \(reason)"
            }
        }

        /// The status a shell would report (`128 + signal` for a signal), for JSON.
        var status: Int32? {
            switch self {
            case .exited(let status): return status
            case .signaled(let signal): return 128 + signal
            case .notStarted: return nil
            }
        }
    }

    // MARK: Running

    /// The shell that runs hooks.
    static let shell = "/bin/sh"

    /// Runs `command` and waits for it.
    ///
    /// - Parameters:
    ///   - command: Shell text, run as `/bin/sh -c command`.
    ///   - environment: The complete environment the command gets.
    ///   - cancellation: Polled while waiting; when it becomes set, the command gets SIGTERM.
    static func run(_ command: String, environment: [String: String], cancellation: CancellationFlag) -> Outcome {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, 2, 1)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&defaults, signal) }
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        // Its own process group, so a stop reaches the command's children too (`sh -c 'a; b'`).
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))

        let words: [String] = [shell, "-c", command]
        let arguments: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) }
        let variables: [UnsafeMutablePointer<CChar>?] = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") }
        defer {
            arguments.forEach { free($0) }
            variables.forEach { free($0) }
        }
        var argv = arguments + [nil]
        var envp = variables + [nil]
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, shell, &actions, &attributes, &argv, &envp)
        guard spawned == 0 else { return .notStarted(String(cString: strerror(spawned))) }
        return wait(for: pid, cancellation: cancellation)
    }

    // MARK: Waiting

    /// Waits for `pid`, forwarding a cancellation that arrives meanwhile as SIGTERM to its
    /// process group (once).
    private static func wait(for pid: pid_t, cancellation: CancellationFlag) -> Outcome {
        var forwarded = cancellation.isCancelled
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, 0)
            if result == pid { break }
            if result == -1 && errno == EINTR {
                if !forwarded && cancellation.isCancelled {
                    forwarded = true
                    kill(-pid, SIGTERM)
                }
                continue
            }
            return .notStarted("waitpid failed: \(String(cString: strerror(errno)))")
        }
        let signal = status & 0x7F
        if signal == 0 { return .exited((status >> 8) & 0xFF) }
        return .signaled(signal)
    }
}
