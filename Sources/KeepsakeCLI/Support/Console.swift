import Foundation
import TerminalUI

/// Where a run of `keepsake` talks: its standard output and error, the terminal around it,
/// and how it asks questions. `main` uses the process's own; a test passes buffers and the
/// terminal it wants (a width, TTY or not, colour or not) to `KeepsakeCLI.run`.
public struct Console: Sendable {
    // MARK: Streams

    /// Data and results (standard output).
    public let output: any TextOutput
    /// Messages, progress and prompts (standard error).
    public let errors: any TextOutput
    /// What the terminal can do, decided with `--color auto` (a command applies its own `--color`).
    public let terminal: TerminalCapabilities
    /// Makes the prompt input and output for pickers and passphrases.
    public let prompts: @Sendable () -> any PromptIO

    // MARK: Init

    /// A console from its parts.
    public init(output: any TextOutput, errors: any TextOutput, terminal: TerminalCapabilities,
                prompts: @escaping @Sendable () -> any PromptIO) {
        self.output = output
        self.errors = errors
        self.terminal = terminal
        self.prompts = prompts
    }

    /// The process's own: descriptors 1 and 2, the terminal they are on, prompts read from
    /// the controlling terminal.
    public static func standard(environment: [String: String]) -> Console {
        let errors = ConsoleWriter.standardError
        return Console(output: ConsoleWriter.standardOutput, errors: errors,
                       terminal: TerminalCapabilities.detect(environment: environment),
                       prompts: { TerminalPromptIO.controllingTerminal(output: errors) })
    }
}
