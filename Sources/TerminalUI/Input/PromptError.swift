import Foundation

/// Why a prompt could not get an answer. Prompts never hang: without a terminal or with
/// input disabled they throw at once.
public enum PromptError: Error, Hashable, CustomStringConvertible {
    // MARK: Cases

    /// Standard input (or the prompt's output) is not a terminal.
    case notInteractive(prompt: String)
    /// Prompts were disabled (for example by a `--no-input` option).
    case inputDisabled(prompt: String)
    /// Input ended (Ctrl-D or a closed pipe) before an answer was given.
    case endOfInput(prompt: String)
    /// The user cancelled (Esc or q in a picker).
    case cancelled(prompt: String)
    /// A picker was given nothing to choose from.
    case noChoices(prompt: String)
    /// The terminal could not be switched into the needed mode.
    case terminalUnavailable(reason: String)

    // MARK: Message

    /// One sentence naming the prompt, suitable for an error message.
    public var description: String {
        switch self {
        case .notInteractive(let prompt):
            return "Cannot ask for '\(prompt)': standard input is not a terminal."
        case .inputDisabled(let prompt):
            return "Cannot ask for '\(prompt)': prompts are disabled."
        case .endOfInput(let prompt):
            return "No answer for '\(prompt)': input ended."
        case .cancelled(let prompt):
            return "'\(prompt)' was cancelled."
        case .noChoices(let prompt):
            return "Nothing to choose from for '\(prompt)'."
        case .terminalUnavailable(let reason):
            return "The terminal could not be configured: \(reason)."
        }
    }
}
