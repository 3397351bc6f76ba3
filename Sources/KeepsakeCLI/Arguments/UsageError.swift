import BackupCore
import KeepsakeSupport

// MARK: - UsageError

/// A command line that cannot be run as typed (exit code 2).
///
/// The message is one sentence in swift-argument-parser's style that quotes the offending
/// token and value. The error also carries the command's name and synopsis, so `lines`
/// can print the whole block without the caller looking the command up again:
///
///     Error: Missing value for '--dest <dir>'.
///
///     Usage: keepsake backup [options] PATH...
///     See 'keepsake backup --help'.
struct UsageError: Error, Sendable, Hashable, CustomStringConvertible {

    // MARK: Reason

    /// What went wrong, with the tokens as the user typed them.
    enum Reason: Sendable, Hashable {
        /// `--destt`, with the suggested spelling (dashes included) if one is close.
        case unknownOption(String, suggestion: String?)
        /// The option as displayed, e.g. `--dest <dir>` or `-d <dir>`.
        case missingValue(option: String)
        /// A value outside the option's allowed values.
        case invalidValue(String, option: String, allowed: [String])
        /// A flag written with `=value`.
        case flagWithValue(flag: String)
        /// A required positional that was not given, e.g. `PATH...`.
        case missingArgument(String)
        /// The first positional beyond what the command takes.
        case unexpectedArgument(String)
        /// A command word that does not exist, with the suggested one if close.
        case unknownCommand(String, suggestion: String?)
        /// A value or positional that is not valid UTF-8 where text is needed: the value as
        /// shown (`\xff` for the bad bytes) and the option (`--tag <tag>`) or argument (`BACKUP`).
        case notUTF8(String, argument: String)
        /// A command's own validation message, already one full sentence.
        case custom(String)
    }

    // MARK: Properties

    /// What went wrong.
    var reason: Reason
    /// The command the line was for (`"backup"`), or `nil` for the top level.
    var commandName: String?
    /// The usage after program and command names (`[options] PATH...`).
    var synopsis: String

    // MARK: Init

    /// Creates an error for `command`, or for the top level when `command` is `nil`.
    init(_ reason: Reason, command: CommandSpec?) {
        self.reason = reason
        self.commandName = command?.name
        self.synopsis = command?.synopsis ?? CommandSpec.topLevelSynopsis
    }

    /// `Unknown command 'bakup'. Did you mean 'backup'?`, with the suggestion taken from `known`.
    static func unknownCommand(_ name: String, known: [String]) -> UsageError {
        UsageError(.unknownCommand(name, suggestion: Suggestion.nearest(to: name, among: known)), command: nil)
    }

    /// A command's own validation failure, e.g.
    /// `The value '0' is invalid for '--keep-last <n>': it must be at least 1.`
    static func custom(_ message: String, command: CommandSpec?) -> UsageError {
        UsageError(.custom(message), command: command)
    }

    // MARK: Message

    /// The one-sentence message, without the `Error: ` prefix.
    var message: String {
        switch reason {
        case .unknownOption(let token, let suggestion):
            return "Unknown option '\(token)'." + didYouMean(suggestion)
        case .missingValue(let option):
            return "Missing value for '\(option)'."
        case .invalidValue(let value, let option, let allowed):
            let hint = allowed.isEmpty ? "" : " Use one of: \(allowed.joined(separator: ", "))."
            return "The value '\(value)' is invalid for '\(option)'." + hint
        case .flagWithValue(let flag):
            return "The flag '\(flag)' does not take a value."
        case .missingArgument(let name):
            return "Missing expected argument '\(name)'."
        case .unexpectedArgument(let token):
            return "Unexpected argument '\(token)'."
        case .unknownCommand(let name, let suggestion):
            return "Unknown command '\(name)'." + didYouMean(suggestion)
        case .notUTF8(let value, let argument):
            return "The value '\(value)' given for '\(argument)' is not valid UTF-8. Only paths may hold other bytes; give this one as UTF-8 text."
        case .custom(let message):
            return message
        }
    }

    /// The message alone, so `"\(error)"` reads well in logs.
    var description: String { message }

    /// Each problem the message holds (a command's validation may find several), one a line.
    var problems: [String] {
        message.split(separator: "\n").map(String.init)
    }

    /// The usage line and the pointer to help, printed under the problems.
    func usageLines(programName: String = "keepsake") -> [String] {
        let command = [programName, commandName].compactMap { $0 }.joined(separator: " ")
        let usage = [command, synopsis].filter { !$0.isEmpty }.joined(separator: " ")
        return ["Usage: \(usage)", "See '\(command) --help'."]
    }

    /// The block to print on stderr: one `Error:` line per problem, a blank line, the usage
    /// line and the pointer to help. Plain text; the caller adds colour if it wants.
    func lines(programName: String = "keepsake") -> [String] {
        problems.map { "Error: \($0)" } + [""] + usageLines(programName: programName)
    }

    // MARK: Helpers

    private func didYouMean(_ suggestion: String?) -> String {
        suggestion.map { " Did you mean '\($0)'?" } ?? ""
    }
}
