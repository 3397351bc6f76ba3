import Foundation

/// A scripted stand-in for the terminal: answers come from a list, output is collected.
/// For tests of anything that prompts.
///
/// ```swift
/// let io = ScriptedPromptIO(lines: ["", "alice"])
/// let name = try Field.validated("Name") { $0.isEmpty ? "Enter a name." : nil }
///     .ask(using: io, context: .plain())
/// // name == "alice"; io.output contains "Enter a name."
/// ```
///
/// `@unchecked Sendable`: the mutable script and output are guarded by `lock`.
public final class ScriptedPromptIO: PromptIO, @unchecked Sendable {

    // MARK: State

    private let lock = NSLock()
    private var lines: [String]
    private var keys: [[UInt8]]
    private var written = ""
    private var hiddenReads = 0
    private var rawSessions = 0

    /// Whether to behave like a terminal.
    public let isInteractive: Bool

    /// Creates a script of answer lines and key presses (each element one read).
    public init(lines: [String] = [], keys: [[UInt8]] = [], isInteractive: Bool = true) {
        self.lines = lines
        self.keys = keys
        self.isInteractive = isInteractive
    }

    // MARK: Inspecting

    /// Everything written so far.
    public var output: String {
        lock.lock()
        defer { lock.unlock() }
        return written
    }

    /// How many lines were read without echo.
    public var secretReadCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return hiddenReads
    }

    /// How many raw-input sessions were started.
    public var rawSessionCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return rawSessions
    }

    // MARK: PromptIO

    /// Records `text`.
    public func write(_ text: String) {
        lock.lock()
        defer { lock.unlock() }
        written += text
    }

    /// The next scripted line, or `nil` when the script is used up.
    public func readLine(echo: Bool) throws -> String? {
        lock.lock()
        defer { lock.unlock() }
        if !echo { hiddenReads += 1 }
        guard !lines.isEmpty else { return nil }
        let line = lines.removeFirst()
        // An echoing terminal shows the answer; mimic it so transcripts read naturally.
        written += (echo ? line : "") + "\n"
        return line
    }

    /// Runs `body` (there is no terminal mode to change).
    public func withRawInput<T>(_ body: () throws -> T) throws -> T {
        lock.lock()
        rawSessions += 1
        lock.unlock()
        return try body()
    }

    /// The next scripted key press, or empty when the script is used up.
    public func readKeyBytes() throws -> [UInt8] {
        lock.lock()
        defer { lock.unlock() }
        return keys.isEmpty ? [] : keys.removeFirst()
    }
}
