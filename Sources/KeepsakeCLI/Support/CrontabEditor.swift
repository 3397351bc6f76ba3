import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Installs one line in the user's crontab idempotently, through the `crontab` program
/// found in `PATH`: reads `crontab -l` ("no crontab for USER" counts as empty), drops every
/// line ending with the line's marker (`# keepsake:home`), appends the new line, and writes
/// the result back with `crontab -`.
struct CrontabEditor {
    // MARK: Errors

    /// Why the crontab could not be changed.
    enum Failure: Error, Equatable, CustomStringConvertible {
        /// No `crontab` program in `PATH`.
        case notInstalled
        /// `crontab -l` or `crontab -` failed.
        case commandFailed(command: String, status: Int32, output: String)
        /// The program could not be started.
        case notStarted(command: String, reason: String)

        var description: String {
            switch self {
            case .notInstalled:
                return "The crontab program is not installed (on Debian: apt-get install cron), so the crontab entry "
                    + "was not installed; the systemd user units above work without cron"
            case .commandFailed(let command, let status, let output):
                let detail = output.trimmingCharacters(in: .whitespacesAndNewlines)
                return "'\(command)' failed with exit status \(status)" + (detail.isEmpty ? "" : ": \(detail)")
            case .notStarted(let command, let reason):
                return "Cannot run '\(command)': \(reason)"
            }
        }
    }

    // MARK: State

    /// The `crontab` program's path.
    let program: String
    /// The environment the program runs with.
    let environment: [String: String]

    /// An editor using the first executable `crontab` in `environment["PATH"]`.
    init(environment: [String: String]) throws(Failure) {
        let folders = (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(String.init)
        guard let found = folders.map({ ($0.isEmpty ? "." : $0) + "/crontab" }).first(where: Self.isExecutableFile) else {
            throw .notInstalled
        }
        program = found
        self.environment = environment
    }

    private static func isExecutableFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && access(path, X_OK) == 0
    }

    // MARK: Editing

    /// Replaces every line ending with `marker` by `line` (appended at the end).
    ///
    /// - Returns: How many old lines were replaced.
    @discardableResult
    func install(_ line: String, marker: String) throws(Failure) -> Int {
        let current = try read()
        let (updated, replaced) = Self.replacing(marker: marker, with: line, in: current)
        let written = try run(["-"], input: updated)
        guard written.status == 0 else {
            throw .commandFailed(command: "crontab -", status: written.status, output: written.errors + written.output)
        }
        return replaced
    }

    /// The current crontab; empty when the user has none.
    func read() throws(Failure) -> String {
        let listed = try run(["-l"], input: nil)
        if listed.status == 0 { return listed.output }
        if listed.errors.lowercased().contains("no crontab for") { return "" }
        throw .commandFailed(command: "crontab -l", status: listed.status, output: listed.errors + listed.output)
    }

    /// `crontab` text with every line ending with `marker` removed and `line` appended.
    static func replacing(marker: String, with line: String, in crontab: String) -> (text: String, replaced: Int) {
        var lines = crontab.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        let kept = lines.filter { !$0.trimmingCharacters(in: .whitespaces).hasSuffix(marker) }
        return ((kept + [line]).joined(separator: "\n") + "\n", lines.count - kept.count)
    }

    // MARK: Running

    /// Runs `crontab ARGUMENTS`, feeding `input`; returns the status, stdout and stderr.
    private func run(_ arguments: [String], input: String?) throws(Failure) -> (status: Int32, output: String, errors: String) {
        let command = (["crontab"] + arguments).joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.environment = environment
        let output = Pipe()
        let errors = Pipe()
        let feed = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = input == nil ? FileHandle.nullDevice : feed
        do {
            try process.run()
        } catch {
            throw .notStarted(command: command, reason: (error as NSError).localizedDescription)
        }
        if let input {
            feed.fileHandleForWriting.write(Data(input.utf8))
            try? feed.fileHandleForWriting.close()
        }
        // Read stderr on another thread so neither pipe can fill up and stall the program.
        let collected = ErrorCollector()
        let reader = Thread { collected.store(errors.fileHandleForReading.readDataToEndOfFile()) }
        reader.start()
        let standardOutput = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let standardError = collected.wait()
        return (process.terminationStatus, String(decoding: standardOutput, as: UTF8.self),
                String(decoding: standardError, as: UTF8.self))
    }
}

// MARK: - Collecting stderr

/// Hands the bytes read on the stderr thread to the caller.
private final class ErrorCollector: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    // Written once by the reader before `done` is signalled; read after waiting on it.
    private var data = Data()

    func store(_ bytes: Data) {
        data = bytes
        done.signal()
    }

    func wait() -> Data {
        done.wait()
        return data
    }
}
