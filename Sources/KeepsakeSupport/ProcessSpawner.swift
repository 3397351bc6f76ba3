import CPosix
import Foundation

/// Starts programs with `posix_spawn`, straight from an argument vector (never through a
/// shell, unless the program is one), the way every child of Keepsake is started:
///
/// - default signal dispositions and an empty signal mask (Keepsake ignores SIGPIPE and
///   may block signals; the child must not inherit that);
/// - a process group of its own, so a Ctrl-C reaches Keepsake only, which then stops the
///   child (and whatever the child started) itself;
/// - every descriptor above 2 closed before the program runs, so the child inherits no file
///   or socket of Keepsake's, whichever thread opened it and however.
///
/// Where the standard streams go is the caller's: `streams` adds the file actions.
public enum ProcessSpawner {
    /// Why a program could not be started.
    public struct Failure: Error, Equatable {
        /// The errno `posix_spawn` gave.
        public let code: Int32
        /// The errno's message.
        public var message: String { FileDescriptorIO.message(code) }
    }

    /// Starts `executable` (a path; not looked up) with `arguments` (argv[1...]; argv[0] is
    /// `executable`) and exactly `environment`. Returns the child's pid, which is also its
    /// process group id.
    public static func spawn(_ executable: String, arguments: [String], environment: [String: String],
                             streams: (inout posix_spawn_file_actions_t) -> Void) throws(Failure) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        streams(&actions)
        ks_spawn_close_from(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigfillset(&defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))

        let argumentCopies: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) }
        let variableCopies: [UnsafeMutablePointer<CChar>?] = environment.sorted { $0.key < $1.key }
            .map { strdup($0.key + "=" + $0.value) }
        defer {
            argumentCopies.forEach { free($0) }
            variableCopies.forEach { free($0) }
        }
        var argv = argumentCopies + [nil]
        var envp = variableCopies + [nil]
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, &argv, &envp)
        guard spawned == 0 else { throw Failure(code: spawned) }
        return pid
    }
}
