import Foundation
import KeepsakeStorage
import KeepsakeSupport

/// How the rclone backend runs the `rclone` program: which binary (looked up on the PATH of
/// the environment it is given), with which configuration and common flags, and how
/// rclone's complaints become messages.
///
/// Every run is `rclone COMMAND COMMON-FLAGS OPTIONS -- PATHS`: the `--` keeps a path from
/// ever being read as a flag. Nothing secret goes into the arguments: credentials stay in
/// rclone's configuration file (or its RCLONE_* variables), which rclone reads itself.
final class RcloneRunner {
    // MARK: State

    /// The program as given: a path, or a name to look up on PATH.
    let program: String
    /// The complete environment rclone runs with.
    let environment: [String: String]
    /// The destination, for messages.
    let destination: String
    private let cancellation: CancellationFlag?
    /// The program's path, or why there is none (looked up once, so the runner never changes).
    private let executable: Result<String, StorageError>

    /// The most of rclone's standard error kept for a message.
    private static let errorLimit = 16 << 10
    /// The most of it that goes into a message.
    private static let reasonLimit = 600

    /// A runner for `program` with `environment`; a set `cancellation` kills the rclone that
    /// runs (except for clean-up runs, which are short and must finish).
    init(program: String, environment: [String: String], destination: String, cancellation: CancellationFlag?) {
        self.program = program
        self.environment = environment
        self.destination = destination
        self.cancellation = cancellation
        executable = RcloneRunner.locate(program, environment: environment, destination: destination)
    }

    // MARK: Outcome

    /// How a finished run went.
    struct Outcome {
        /// How rclone ended.
        var termination: ChildProcess.Termination
        /// Standard output, up to the limit asked for.
        var output: [UInt8]
        /// The end of standard error.
        var errorText: String

        /// The outcome of a process that has ended.
        init(of process: ChildProcess, output: [UInt8] = []) {
            self.init(termination: process.termination ?? .signaled(SIGKILL), output: output, errorText: process.standardError)
        }

        /// An outcome from its parts.
        init(termination: ChildProcess.Termination, output: [UInt8], errorText: String) {
            self.termination = termination
            self.output = output
            self.errorText = errorText
        }

        /// True for exit status 0.
        var succeeded: Bool { termination.succeeded }

        /// rclone's statuses for a missing directory (3) or file (4).
        var isNotFound: Bool { termination.exitStatus == 3 || termination.exitStatus == 4 }

        /// rclone's configuration has no section of the remote's name (rclone 1.60 and later
        /// say so in these words; the status is the generic one).
        var isUnknownRemote: Bool { errorText.contains("didn't find section in config file") }
    }

    // MARK: Running

    /// Starts `rclone command` with a pipe to its input or from its output if asked for.
    func start(_ command: String, options: [String] = [], paths: [String], input: ChildProcess.Stream = .null,
               output: ChildProcess.Stream = .null, cancellable: Bool = true) throws -> ChildProcess {
        if cancellable, cancellation?.isCancelled == true { throw Interruption() }
        let executable = try self.executable.get()
        do {
            return try ChildProcess(executable: executable, arguments: [command] + commonOptions + options + ["--"] + paths,
                                    environment: environment, input: input, output: output, errorLimit: RcloneRunner.errorLimit,
                                    cancellation: cancellable ? cancellation : nil)
        } catch {
            throw self.error(for: error, executable: executable)
        }
    }

    /// Runs `rclone command` to its end, feeding it `input` and keeping up to `outputLimit`
    /// bytes of its output.
    func run(_ command: String, options: [String] = [], paths: [String], input: [UInt8]? = nil, outputLimit: Int = 0,
             cancellable: Bool = true) throws -> Outcome {
        let process = try start(command, options: options, paths: paths, input: input == nil ? .null : .pipe,
                                output: outputLimit > 0 ? .pipe : .null, cancellable: cancellable)
        do {
            if let input {
                do {
                    try input.withUnsafeBytes { try process.write($0) }
                } catch ChildProcess.Failure.io(EPIPE) {
                    // It ended before reading everything: its status and words say why.
                }
            }
            var output: [UInt8] = []
            try process.finish(collectingOutputInto: &output, limit: outputLimit)
            return Outcome(of: process, output: output)
        } catch {
            process.terminate()
            throw self.error(for: error, executable: program)
        }
    }

    /// The error to throw for a failure of the child-process layer.
    private func error(for error: Error, executable: String) -> Error {
        switch error as? ChildProcess.Failure {
        case .cancelled?:
            return Interruption()
        case .notStarted(let reason)?:
            return StorageError.unusable(destination: destination, reason: "cannot run rclone (\(executable)): \(reason); "
                + "install rclone (on Debian: apt install rclone) or give the right path to it")
        case .io(let code)?:
            return StorageError.unusable(destination: destination, reason: "lost touch with rclone: " + FileDescriptorIO.message(code))
        case nil:
            return error
        }
    }

    /// Flags every run gets: the configuration file RCLONE_CONFIG names (as rclone itself
    /// would read it), no password prompt (Keepsake runs from cron; rclone's standard input
    /// is ours), one attempt (Keepsake decides what a failure means; network-level retries
    /// stay on), and `-q` unless the environment asks rclone for a log level itself (rclone
    /// refuses `-q` beside RCLONE_VERBOSE).
    private var commonOptions: [String] {
        var options = ["--ask-password=false", "--retries", "1"]
        if let configuration = environment["RCLONE_CONFIG"], !configuration.isEmpty {
            options += ["--config", configuration]
        }
        if (environment["RCLONE_VERBOSE"] ?? "").isEmpty && (environment["RCLONE_LOG_LEVEL"] ?? "").isEmpty {
            options.append("-q")
        }
        return options
    }

    /// The program's path: as given when it holds a slash, else the first executable file
    /// of that name on the environment's PATH (as a shell would find it).
    private static func locate(_ program: String, environment: [String: String],
                               destination: String) -> Result<String, StorageError> {
        if program.contains("/") { return .success(program) }
        let search = environment["PATH"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/bin:/usr/bin:/bin"
        let found = program.isEmpty ? nil : search.split(separator: ":").map { $0 + "/" + program }.first { candidate in
            var info = stat()
            return stat(candidate, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && access(candidate, X_OK) == 0
        }
        guard let found else {
            return .failure(.unusable(destination: destination, reason: "cannot run rclone: there is no program '\(program)' "
                + "on PATH; install rclone (on Debian: apt install rclone) or give the path to it"))
        }
        return .success(found)
    }

    // MARK: Messages

    /// Why a run failed, in a sentence for people: rclone's own last words (timestamps, log
    /// levels and repeats dropped, values of secret-looking environment variables masked),
    /// or how it ended when it said nothing.
    func reason(_ outcome: Outcome) -> String {
        var lines: [String] = []
        for raw in outcome.errorText.split(whereSeparator: \.isNewline) {
            var line = RcloneRunner.withoutTimestamp(raw.trimmingCharacters(in: .whitespaces))
            for level in ["ERROR : ", "NOTICE: ", "CRITICAL: "] where line.hasPrefix(level) {
                line.removeFirst(level.count)
            }
            if !line.isEmpty && !lines.contains(line) { lines.append(line) }
        }
        guard !lines.isEmpty else { return "rclone ended with \(outcome.termination) and gave no reason" }
        var text = lines.suffix(4).joined(separator: "; ")
        for (name, value) in environment where value.count >= 4 && RcloneRunner.looksSecret(name) {
            text = text.replacingOccurrences(of: value, with: "***")
        }
        if text.count > RcloneRunner.reasonLimit { text = "…" + text.suffix(RcloneRunner.reasonLimit) }
        return text
    }

    /// A log line without rclone's `2006/01/02 15:04:05 ` prefix.
    private static func withoutTimestamp(_ line: String) -> String {
        let bytes = Array(line.utf8.prefix(20))
        let isDigit: (Int) -> Bool = { bytes[$0] >= 0x30 && bytes[$0] <= 0x39 }
        guard bytes.count == 20, bytes[4] == UInt8(ascii: "/"), bytes[7] == UInt8(ascii: "/"), bytes[10] == UInt8(ascii: " "),
              bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"), bytes[19] == UInt8(ascii: " "),
              [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18].allSatisfy(isDigit) else { return line }
        return String(line.dropFirst(20))
    }

    /// Names of variables that may hold credentials (RCLONE_CONFIG_PASS, AWS_SECRET_ACCESS_KEY, …).
    private static func looksSecret(_ name: String) -> Bool {
        let upper = name.uppercased()
        return ["PASS", "SECRET", "TOKEN", "KEY", "CREDENTIAL"].contains { upper.contains($0) }
    }
}
