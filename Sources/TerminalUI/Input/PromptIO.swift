import Foundation

/// The input and output a prompt talks through, so tests can feed answers and capture
/// what was shown. `TerminalPromptIO` is the real terminal, `ScriptedPromptIO` a script.
public protocol PromptIO {
    // MARK: Lines

    /// Whether a person can answer (input and output are terminals).
    var isInteractive: Bool { get }
    /// Shows text (prompts, messages) without adding a newline.
    func write(_ text: String)
    /// Reads one line without its line break; `nil` at end of input. With `echo: false`
    /// the typed characters are not shown.
    func readLine(echo: Bool) throws -> String?
    // MARK: Keys

    /// Runs `body` with single-key input (raw mode), restoring the terminal afterwards.
    func withRawInput<T>(_ body: () throws -> T) throws -> T
    /// Reads the bytes of the next key press (an escape sequence arrives whole); empty
    /// at end of input.
    func readKeyBytes() throws -> [UInt8]
}
