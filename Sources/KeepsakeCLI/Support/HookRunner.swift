import BackupCore
import Foundation
import KeepsakeSupport

#if canImport(Glibc)
import Glibc
#endif

/// Runs a profile's `before` or `after` command with `/bin/sh -c`.
///
/// The command's standard input is `/dev/null`; its standard output and standard error both
/// go to Keepsake's standard error, so `keepsake run` keeps standard output for its own
/// results. It is started by `ProcessSpawner`: signal dispositions are reset (Keepsake
/// ignores SIGPIPE; the command must not) and no descriptor of Keepsake's above 2 is inherited.
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
        let pid: pid_t
        do {
            // Its own process group, so a stop reaches the command's children too (`sh -c 'a; b'`).
            pid = try ProcessSpawner.spawn(shell, arguments: ["-c", command], environment: environment) { actions in
                posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
                posix_spawn_file_actions_adddup2(&actions, 2, 1)
            }
        } catch {
            return .notStarted(error.message)
        }
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
