import Foundation
import KeepsakeTestSupport
@testable import KeepsakeCLI
import TerminalUI
import XCTest

/// The base of the tests that run `keepsake` in process through `KeepsakeCLI.run`: a
/// private temporary folder (HOME and the XDG folders inside it), a terminal of the test's
/// choosing, and standard output and error captured in buffers.
class InProcessTestCase: KeepsakeTestCase {
    // MARK: Terminal

    /// The terminal a run sees.
    struct Terminal {
        /// Its width in cells (also given as `COLUMNS`, as a user who sets it would).
        let width: Int
        /// Whether standard input, output and error are a terminal (else pipes).
        let isTTY: Bool

        /// A terminal `width` cells wide: styled output, unless `--color never` or `NO_COLOR`.
        static func tty(_ width: Int) -> Terminal { Terminal(width: width, isTTY: true) }
        /// Pipes, laid out for `width` cells: no escape sequences.
        static func pipe(_ width: Int) -> Terminal { Terminal(width: width, isTTY: false) }
    }

    /// What one run printed, and how it ended.
    struct Run: CustomStringConvertible {
        let code: ExitCode
        let stdout: String
        let stderr: String

        var description: String { "exit \(code.rawValue)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
    }

    // MARK: State

    /// This test's temporary folder (absolute, symlinks resolved).
    private(set) var work = ""
    /// HOME for every run.
    var home: String { work + "/home" }

    override func setUpWithError() throws {
        try super.setUpWithError()
        var template = Array("/tmp/ks-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.flatMap { mkdtemp($0) } }
        let resolved = try XCTUnwrap(made.flatMap { realpath($0, nil) }, "mkdtemp failed")
        work = String(cString: resolved)
        free(resolved)
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        if work.hasPrefix("/tmp/ks-") { try? FileManager.default.removeItem(atPath: work) }
        try super.tearDownWithError()
    }

    // MARK: Running

    /// `work/relative`.
    func path(_ relative: String) -> String { work + "/" + relative }

    /// The environment of every run: HOME and the XDG folders in `work`, the width as
    /// `COLUMNS`, then `changes` (a nil value removes a variable).
    func environment(width: Int, _ changes: [String: String?] = [:]) -> [String: String] {
        var environment = [
            "HOME": home, "XDG_DATA_HOME": home + "/data", "XDG_CONFIG_HOME": home + "/config",
            "XDG_CACHE_HOME": home + "/cache", "COLUMNS": String(width), "TERM": "xterm-256color",
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
        ]
        for (key, value) in changes { environment[key] = value }
        return environment
    }

    /// Runs `keepsake ARGUMENTS` in process on `terminal`; prompts read from `prompts`.
    @discardableResult
    func keepsake(_ arguments: [String], on terminal: Terminal = .pipe(80), environment changes: [String: String?] = [:],
                  prompts: ScriptedPromptIO = ScriptedPromptIO(isInteractive: false)) -> Run {
        let environment = environment(width: terminal.width, changes)
        let output = CapturedOutput(isTerminal: terminal.isTTY)
        let errors = CapturedOutput(isTerminal: terminal.isTTY)
        let capabilities = TerminalCapabilities(environment: environment, stdinIsTTY: terminal.isTTY,
                                                stdoutIsTTY: terminal.isTTY, stderrIsTTY: terminal.isTTY,
                                                measuredWidth: terminal.width)
        let console = Console(output: output, errors: errors, terminal: capabilities, prompts: { prompts })
        let code = KeepsakeCLI.run(arguments: arguments, environment: environment, console: console)
        return Run(code: code, stdout: output.text, stderr: errors.text)
    }

    /// Runs `keepsake ARGUMENTS` and fails the test unless it exits with `code`.
    @discardableResult
    func keepsake(_ arguments: [String], on terminal: Terminal = .pipe(80), environment changes: [String: String?] = [:],
                  expecting code: ExitCode, file: StaticString = #filePath, line: UInt = #line) -> Run {
        let run = keepsake(arguments, on: terminal, environment: changes)
        XCTAssertEqual(run.code, code, "keepsake \(arguments.joined(separator: " "))\n\(run)", file: file, line: line)
        return run
    }

    // MARK: Trees

    /// Writes `files` (relative path → contents) under `root`, creating folders.
    func makeTree(_ root: String, _ files: [String: String]) throws {
        for (relative, contents) in files {
            let file = root + "/" + relative
            try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try Data(contents.utf8).write(to: URL(fileURLWithPath: file))
        }
    }
}
