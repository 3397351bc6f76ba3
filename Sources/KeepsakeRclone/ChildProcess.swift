import CPosix
import Foundation
import KeepsakeSupport

/// A program run straight from an argument vector (`posix_spawn`, never a shell), with a
/// pipe to its standard input and one from its standard output when asked for (else
/// `/dev/null`), its standard error captured up to a limit, and its exit status.
///
/// - Starting: `ProcessSpawner` (default signal dispositions, a process group of its own,
///   no descriptor above 2 inherited); the pipes are made close-on-exec in one step, so a
///   child another thread starts meanwhile cannot inherit them either.
/// - SIGPIPE: a write to a child that has ended fails with EPIPE because Keepsake ignores
///   SIGPIPE for the whole process (`SignalHandling.install`, as `keepsake list | head`
///   needs); a process embedding BackupCore must do the same.
/// - Cancellation: while it waits for the child, a set `cancellation` flag kills the child
///   and throws `Failure.cancelled`.
/// - Lifetime: `terminate()` (also run by `deinit`) kills the child if it still runs and
///   reaps it, so no child outlives its handle.
///
/// Our ends of the pipes are non-blocking: every wait is a `poll` that also drains standard
/// error (a child blocked on a full stderr pipe would never read its input) and wakes up
/// to look at the cancellation flag.
final class ChildProcess {
    // MARK: Types

    /// Where a standard stream of the child goes.
    enum Stream {
        /// `/dev/null`.
        case null
        /// A pipe to (input) or from (output) this process.
        case pipe
    }

    /// How the child ended.
    enum Termination: Equatable, CustomStringConvertible {
        /// It exited with this status.
        case exited(Int32)
        /// This signal ended it.
        case signaled(Int32)

        /// True for exit status 0.
        var succeeded: Bool { self == .exited(0) }

        /// The exit status, nil when a signal ended it.
        var exitStatus: Int32? {
            if case .exited(let status) = self { return status }
            return nil
        }

        var description: String {
            switch self {
            case .exited(let status): return "exit status \(status)"
            case .signaled(let signal): return "signal \(signal)"
            }
        }
    }

    /// Why talking to the child failed.
    enum Failure: Error, Equatable {
        /// The program could not be started (the reason as strerror gives it).
        case notStarted(String)
        /// A read or write on a pipe failed with this errno (EPIPE: the child is gone).
        case io(Int32)
        /// The cancellation flag was set; the child has been killed.
        case cancelled
    }

    // MARK: State

    /// The child's process id (and process group id).
    let pid: pid_t
    private var inputFD: Int32
    private var outputFD: Int32
    private var errorFD: Int32
    private let cancellation: CancellationFlag?
    /// The end of what the child wrote to standard error, at most `errorLimit` bytes.
    private var errorTail: [UInt8] = []
    private let errorLimit: Int
    /// How the child ended, once it has been reaped.
    private(set) var termination: Termination?

    /// How long one `poll` sleeps before looking at the cancellation flag again.
    private static let pollSlice: Int32 = 200

    // MARK: Starting

    /// Starts `executable` (a path, not looked up) with `arguments` (argv[1...]) and exactly
    /// `environment`.
    init(executable: String, arguments: [String], environment: [String: String], input: Stream, output: Stream,
         errorLimit: Int = 64 << 10, cancellation: CancellationFlag? = nil) throws(Failure) {
        var inputPipe: [Int32] = [-1, -1]
        var outputPipe: [Int32] = [-1, -1]
        var errorPipe: [Int32] = [-1, -1]
        func closeAll() {
            for fd in inputPipe + outputPipe + errorPipe where fd >= 0 { close(fd) }
        }
        guard input == .null || ks_pipe_cloexec(&inputPipe) == 0,
              output == .null || ks_pipe_cloexec(&outputPipe) == 0,
              ks_pipe_cloexec(&errorPipe) == 0 else {
            let code = errno
            closeAll()
            throw .notStarted("cannot make a pipe: " + FileDescriptorIO.message(code))
        }

        let child: pid_t
        do {
            child = try ProcessSpawner.spawn(executable, arguments: arguments, environment: environment) { actions in
                if input == .pipe {
                    posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
                } else {
                    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
                }
                if output == .pipe {
                    posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
                } else {
                    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
                }
                posix_spawn_file_actions_adddup2(&actions, errorPipe[1], 2)
            }
        } catch {
            closeAll()
            throw .notStarted(error.message)
        }
        // The child's ends belong to the child now.
        for fd in [inputPipe[0], outputPipe[1], errorPipe[1]] where fd >= 0 { close(fd) }
        pid = child
        inputFD = inputPipe[1]
        outputFD = outputPipe[0]
        errorFD = errorPipe[0]
        self.errorLimit = errorLimit
        self.cancellation = cancellation
        for fd in [inputFD, outputFD, errorFD] where fd >= 0 {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
    }

    deinit { terminate() }

    // MARK: Talking to the child

    /// What the child wrote to standard error (its end, when there was more than the limit).
    var standardError: String { String(decoding: errorTail, as: UTF8.self) }

    /// Writes all of `buffer` to the child's standard input.
    func write(_ buffer: UnsafeRawBufferPointer) throws(Failure) {
        guard inputFD >= 0 else { throw .io(EBADF) }
        var rest = buffer
        while !rest.isEmpty {
            let written = Glibc.write(inputFD, rest.baseAddress, rest.count)
            let code = errno
            if written > 0 {
                rest = UnsafeRawBufferPointer(rebasing: rest[written...])
            } else if written == 0 || code == EAGAIN {
                // The pipe is full: rclone has not read yet.
                try waitFor(inputFD, events: Int16(POLLOUT))
            } else if code != EINTR {
                throw .io(code)
            }
        }
    }

    /// Reads up to `buffer.count` bytes of the child's standard output; 0 at its end.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(Failure) -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        guard outputFD >= 0 else { return 0 }
        while true {
            let count = Glibc.read(outputFD, base, buffer.count)
            if count >= 0 { return count }
            let code = errno
            if code == EINTR { continue }
            guard code == EAGAIN else { throw .io(code) }
            try waitFor(outputFD, events: Int16(POLLIN))
        }
    }

    /// Fills `buffer` from standard output; fewer bytes only at its end.
    func readFully(into buffer: UnsafeMutableRawBufferPointer) throws(Failure) -> Int {
        var filled = 0
        while filled < buffer.count {
            let count = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
            if count == 0 { break }
            filled += count
        }
        return filled
    }

    /// Closes the child's standard input: it reads the end of its input.
    func closeInput() {
        if inputFD >= 0 { close(inputFD) }
        inputFD = -1
    }

    /// Closes standard input, reads what is left of standard output into `sink` (up to
    /// `limit` bytes in all, the rest is dropped) and of standard error, and waits for the
    /// child to end.
    @discardableResult
    func finish(collectingOutputInto sink: inout [UInt8], limit: Int = 0) throws(Failure) -> Termination {
        closeInput()
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 1)
        defer { chunk.deallocate() }
        while outputFD >= 0 {
            let count = try read(into: chunk)
            if count == 0 {
                close(outputFD)
                outputFD = -1
            } else if sink.count < limit {
                sink.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<min(count, limit - sink.count)]))
            }
        }
        while errorFD >= 0 {
            try waitFor(nil, events: 0)
        }
        return reap()
    }

    /// `finish` for a child whose output does not matter.
    @discardableResult
    func finish() throws(Failure) -> Termination {
        var ignored: [UInt8] = []
        return try finish(collectingOutputInto: &ignored)
    }

    /// Kills the child (and its process group) if it still runs, closes the pipes and reaps
    /// it. Safe to call twice.
    func terminate() {
        for fd in [inputFD, outputFD, errorFD] where fd >= 0 { close(fd) }
        inputFD = -1
        outputFD = -1
        errorFD = -1
        guard termination == nil else { return }
        kill(-pid, SIGKILL)
        kill(pid, SIGKILL)
        _ = reap()
    }

    // MARK: Waiting

    /// Polls until `fd` is ready for `events` (or has an error or hang-up), draining standard
    /// error meanwhile; with `fd` nil, returns after one round that drained or ended it.
    private func waitFor(_ fd: Int32?, events: Int16) throws(Failure) {
        while true {
            if cancellation?.isCancelled == true {
                terminate()
                throw .cancelled
            }
            var descriptors: [pollfd] = []
            if let fd { descriptors.append(pollfd(fd: fd, events: events, revents: 0)) }
            if errorFD >= 0 { descriptors.append(pollfd(fd: errorFD, events: Int16(POLLIN), revents: 0)) }
            guard !descriptors.isEmpty else { return }
            let ready = poll(&descriptors, nfds_t(descriptors.count), ChildProcess.pollSlice)
            if ready < 0 {
                if errno == EINTR { continue }
                throw .io(errno)
            }
            if ready == 0 { continue }
            let errorIndex = fd == nil ? 0 : 1
            if descriptors.count > errorIndex && descriptors[errorIndex].revents != 0 {
                drainStandardError()
                if fd == nil { return }
            }
            if fd != nil && descriptors[0].revents != 0 { return }
        }
    }

    /// Reads what standard error has now, keeping its last `errorLimit` bytes; closes it at
    /// its end.
    private func drainStandardError() {
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while errorFD >= 0 {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(errorFD, $0.baseAddress, $0.count) }
            if count > 0 {
                errorTail.append(contentsOf: chunk[0..<count])
                if errorTail.count > 2 * errorLimit { errorTail.removeFirst(errorTail.count - errorLimit) }
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && errno == EAGAIN { return }
            close(errorFD)
            errorFD = -1
        }
    }

    /// Waits for the child's end (once) and records how it ended.
    private func reap() -> Termination {
        if let termination { return termination }
        var status: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(pid, &status, 0) } while result < 0 && errno == EINTR
        if errorTail.count > errorLimit { errorTail.removeFirst(errorTail.count - errorLimit) }
        let signal = status & 0x7F
        // Unknown when something else reaped it (SIGCHLD ignored): reported as a failure.
        let ended: Termination = result != pid ? .exited(-1) : signal == 0 ? .exited((status >> 8) & 0xFF) : .signaled(signal)
        termination = ended
        return ended
    }
}
