import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs external programs (the `keepsake` binary, GNU tar, zstd, python3, …) with
/// Foundation's `Process`, capturing stdout, stderr and the exit code.
///
/// Output goes to temporary files rather than pipes, so a chatty program can never
/// dead-lock against a full pipe buffer, and the captured streams are never TTYs.
enum ProcessRunner {
    // MARK: Types

    /// What a finished program left behind.
    struct Outcome: CustomStringConvertible {
        /// The command line, for messages.
        let command: [String]
        /// The exit status, or 128 + signal when the program was killed.
        let exitCode: Int32
        /// Everything written to standard output.
        let stdout: Data
        /// Everything written to standard error.
        let stderr: Data

        /// Standard output decoded as UTF-8 (invalid bytes replaced).
        var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        /// Standard error decoded as UTF-8 (invalid bytes replaced).
        var stderrText: String { String(decoding: stderr, as: UTF8.self) }
        /// Both streams, stdout first, for assertions that do not care where a line went.
        var combinedText: String { stdoutText + "\n" + stderrText }

        /// A readable account of the run for failure messages (long streams shortened).
        var description: String {
            func shortened(_ text: String) -> String {
                text.count > 4000 ? String(text.prefix(4000)) + "\n…(\(text.count - 4000) more characters)" : text
            }
            return "$ \(command.joined(separator: " "))\nexit code \(exitCode)\n--- stdout\n\(shortened(stdoutText))"
                + "\n--- stderr\n\(shortened(stderrText))"
        }
    }

    /// A failure to start or finish a program.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// A program running in the background with an open pipe on its standard input.
    final class Running {
        private let process: Process
        private let command: [String]
        private let input: Pipe
        private let capture: Capture
        private var inputClosed = false

        fileprivate init(process: Process, command: [String], input: Pipe, capture: Capture) {
            self.process = process
            self.command = command
            self.input = input
            self.capture = capture
        }

        /// The child's process id.
        var processIdentifier: Int32 { process.processIdentifier }

        /// True while the child has not exited.
        var isRunning: Bool { process.isRunning }

        /// Feeds bytes to the child's standard input.
        func write(_ data: Data) {
            input.fileHandleForWriting.write(data)
        }

        /// Closes the child's standard input (end of file).
        func closeInput() {
            guard !inputClosed else { return }
            inputClosed = true
            try? input.fileHandleForWriting.close()
        }

        /// Closes standard input and waits for the child to exit.
        func finish(timeout: TimeInterval = 120) throws -> Outcome {
            closeInput()
            return try ProcessRunner.wait(for: process, command: command, capture: capture, timeout: timeout)
        }

        /// Kills the child if it is still running (for clean-up after a failed test).
        func kill() {
            closeInput()
            if process.isRunning { process.terminate() }
        }
    }

    /// Temporary files that receive a child's output.
    fileprivate struct Capture {
        let folder: URL
        let stdout: FileHandle
        let stderr: FileHandle

        init() throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("keepsake-e2e-io-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for name in ["stdout", "stderr"] {
                _ = FileManager.default.createFile(atPath: folder.appendingPathComponent(name).path, contents: nil)
            }
            guard let out = FileHandle(forWritingAtPath: folder.appendingPathComponent("stdout").path),
                  let err = FileHandle(forWritingAtPath: folder.appendingPathComponent("stderr").path) else {
                throw Failure(description: "cannot open capture files in \(folder.path)")
            }
            stdout = out
            stderr = err
        }

        /// Reads what was captured and removes the files.
        func collect() -> (Data, Data) {
            try? stdout.close()
            try? stderr.close()
            let out = (try? Data(contentsOf: folder.appendingPathComponent("stdout"))) ?? Data()
            let err = (try? Data(contentsOf: folder.appendingPathComponent("stderr"))) ?? Data()
            try? FileManager.default.removeItem(at: folder)
            return (out, err)
        }
    }

    // MARK: Locating programs

    /// The full path of a program: absolute paths as given, otherwise the first match in
    /// the system folders (so `python3` is Debian's, not a slow shim), then in `PATH`.
    static func locate(_ program: String) throws -> String {
        if program.hasPrefix("/") { return program }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"] + path.split(separator: ":").map(String.init)
        for folder in folders where access(folder + "/" + program, X_OK) == 0 {
            return folder + "/" + program
        }
        throw Failure(description: "the program '\(program)' is not installed")
    }

    // MARK: Running

    /// Runs `program` to completion.
    /// - Parameters:
    ///   - stdin: bytes for standard input; `/dev/null` when nil.
    ///   - environment: the complete environment; the test process's when nil.
    ///   - currentDirectory: the working directory; the test process's when nil.
    ///   - timeout: seconds after which the program is terminated and the run fails.
    static func run(_ program: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil,
                    currentDirectory: String? = nil, timeout: TimeInterval = 120) throws -> Outcome {
        let executable = try locate(program)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        let capture = try Capture()
        process.standardOutput = capture.stdout
        process.standardError = capture.stderr
        if let stdin {
            let url = capture.folder.appendingPathComponent("stdin")
            try stdin.write(to: url)
            process.standardInput = FileHandle(forReadingAtPath: url.path)
        } else {
            process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        }
        let command = [executable] + arguments
        do {
            try process.run()
        } catch {
            _ = capture.collect()
            throw Failure(description: "cannot start \(command.joined(separator: " ")): \(error)")
        }
        return try wait(for: process, command: command, capture: capture, timeout: timeout)
    }

    /// Starts `program` in the background with a pipe on its standard input.
    static func start(_ program: String, _ arguments: [String], environment: [String: String]? = nil,
                      currentDirectory: String? = nil) throws -> Running {
        let executable = try locate(program)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        let capture = try Capture()
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = capture.stdout
        process.standardError = capture.stderr
        let command = [executable] + arguments
        do {
            try process.run()
        } catch {
            _ = capture.collect()
            throw Failure(description: "cannot start \(command.joined(separator: " ")): \(error)")
        }
        return Running(process: process, command: command, input: input, capture: capture)
    }

    // MARK: Running with byte arguments

    /// Runs `program` with arguments given as bytes, to completion. Foundation's `Process`
    /// takes `String`s, which cannot hold a path that is not UTF-8 (a byte 0xff), so this
    /// spawns with `posix_spawn` and hands the bytes to `argv` unchanged.
    /// - Parameters:
    ///   - stdin: bytes for standard input; `/dev/null` when nil.
    ///   - environment: the complete environment.
    static func run(_ program: String, byteArguments arguments: [[UInt8]], stdin: Data? = nil,
                    environment: [String: String], timeout: TimeInterval = 120) throws -> Outcome {
        let executable = try locate(program)
        let capture = try Capture()
        let inputPath = capture.folder.appendingPathComponent("stdin").path
        try (stdin ?? Data()).write(to: URL(fileURLWithPath: inputPath))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin == nil ? "/dev/null" : inputPath, O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, capture.stdout.fileDescriptor, 1)
        posix_spawn_file_actions_adddup2(&actions, capture.stderr.fileDescriptor, 2)
        // NUL-terminated copies that live until the child has started.
        let argv = ([Array(executable.utf8)] + arguments).map { bytes -> UnsafeMutablePointer<CChar>? in
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            for (index, byte) in bytes.enumerated() { copy[index] = CChar(bitPattern: byte) }
            copy[bytes.count] = 0
            return copy
        }
        let envp = environment.map { key, value in strdup(key + "=" + value) }
        defer {
            argv.forEach { $0?.deallocate() }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let started = posix_spawn(&pid, executable, &actions, nil, argv + [nil], envp + [nil])
        let command = [executable] + arguments.map { String(decoding: $0, as: UTF8.self) }
        guard started == 0 else {
            _ = capture.collect()
            throw Failure(description: "cannot start \(command.joined(separator: " ")): \(String(cString: strerror(started)))")
        }
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        var timedOut = false
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline && !timedOut {
                timedOut = true
                kill(pid, SIGKILL)
            }
            usleep(1000)
        }
        let (out, err) = capture.collect()
        let signal = status & 0x7f
        let code = signal == 0 ? (status >> 8) & 0xff : 128 + signal
        let outcome = Outcome(command: command, exitCode: code, stdout: out, stderr: err)
        if timedOut {
            throw Failure(description: "timed out after \(Int(timeout)) s and was killed:\n\(outcome)")
        }
        return outcome
    }

    // MARK: Waiting

    /// Waits for `process` (terminating it after `timeout`) and collects its output.
    fileprivate static func wait(for process: Process, command: [String], capture: Capture,
                                 timeout: TimeInterval) throws -> Outcome {
        let deadline = Date().addingTimeInterval(timeout)
        var timedOut = false
        while process.isRunning {
            if Date() > deadline {
                timedOut = true
                process.terminate()
                break
            }
            usleep(1000)
        }
        process.waitUntilExit()
        let (out, err) = capture.collect()
        let code = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        let outcome = Outcome(command: command, exitCode: code, stdout: out, stderr: err)
        if timedOut {
            throw Failure(description: "timed out after \(Int(timeout)) s and was terminated:\n\(outcome)")
        }
        return outcome
    }
}
