import BackupCore
import Foundation
import TerminalUI

/// The `keepsake` command line: parses, dispatches to a command, maps every outcome to a
/// documented exit code.
public enum KeepsakeCLI {
    // MARK: Constants

    /// The tool's version.
    public static let version = "0.2.0"
    static let abstract = "Back up and restore directories as compressed, self-describing tar archives."

    // MARK: Entry points

    /// Runs `keepsake` as the process: its arguments read as bytes from `argv` (so a path
    /// that is not UTF-8 arrives intact), its environment, descriptors 1 and 2 and its
    /// terminal; returns the exit code.
    public static func main() -> Int32 {
        setlocale(LC_ALL, "C.UTF-8")
        SignalHandling.install()
        let environment = ProcessInfo.processInfo.environment
        return run(CommandLineArgument.processArguments(), environment: environment,
                   console: .standard(environment: environment)).rawValue
    }

    /// Runs `keepsake` in process with `arguments` (without the program name), reading only
    /// `environment` and writing only to `console`; returns the exit code.
    public static func run(arguments: [String], environment: [String: String], console: Console) -> ExitCode {
        run(arguments.map { CommandLineArgument($0) }, environment: environment, console: console)
    }

    static func run(_ arguments: [CommandLineArgument], environment: [String: String], console: Console) -> ExitCode {
        // Before a command is known, the defaults: colour when the terminal allows it.
        let bare = CommandContext(arguments: ParsedArguments(), environment: environment, console: console,
                                  cancellation: SignalHandling.cancellation)
        guard let first = arguments.first?.text else {
            HelpCommand.printShortUsage(context: bare)
            return .success
        }
        switch first {
        case "--version", "-V", "version":
            if arguments.dropFirst().contains(where: { $0.text == "--json" }) {
                bare.printJSON(.object(JSONObject([("name", .string("keepsake")), ("version", .string(version))])), pretty: false)
            } else {
                bare.printLine("keepsake \(version)")
            }
            return .success
        case "--help", "-h":
            HelpCommand.printTopLevel(context: bare)
            return .success
        default:
            break
        }
        guard let command = CommandRegistry.command(named: first) else {
            let error = ArgumentParser.looksLikeOption(first)
                ? UsageError(.unknownOption(first, suggestion: nil), command: nil)
                : UsageError.unknownCommand(first, known: CommandRegistry.all.map { $0.spec.name })
            printUsageError(error, context: bare, json: wantsJSON(arguments))
            return .usage
        }
        return run(command, arguments: Array(arguments.dropFirst()), environment: environment, console: console, bare: bare)
    }

    // MARK: Running a command

    private static func run(_ command: any KeepsakeCommand.Type, arguments: [CommandLineArgument],
                            environment: [String: String], console: Console, bare: CommandContext) -> ExitCode {
        let parsed: ParsedArguments
        do {
            parsed = try ArgumentParser.parse(arguments, for: command.spec)
        } catch {
            printUsageError(error, context: bare, json: wantsJSON(arguments))
            return .usage
        }
        let context = CommandContext(arguments: parsed, environment: environment, console: console,
                                     cancellation: SignalHandling.cancellation)
        if parsed.flag("help") {
            HelpCommand.printHelp(for: command.spec, context: context)
            return .success
        }
        do {
            let instance = try command.init(arguments: parsed, context: context)
            return try instance.run(context: context)
        } catch let error as UsageError {
            printUsageError(error, context: context, json: context.json)
            return .usage
        } catch {
            return report(error, context: context)
        }
    }

    /// Prints a failure and picks its exit code.
    static func report(_ error: Error, context: CommandContext) -> ExitCode {
        let code: ExitCode
        var message = "\(error)"
        switch error {
        case EngineError.interrupted:
            code = .interrupted
        case is LockError:
            code = .locked
        case is EncryptionError:
            code = .key
        case EngineError.archiveMissing, EngineError.manifestUnreadable, ArchiveError.damaged:
            // A backup found damaged (its archive gone, its manifest unreadable or hostile).
            code = .integrity
        case let failure as ExcludePatternError:
            code = .usage
            message = failure.description
        case let failure as DestinationAddressError:
            // The value of --dest (or KEEPSAKE_DEST, or a profile's destination) is wrong.
            code = .usage
            message = failure.description
        default:
            code = .failure
        }
        if !message.hasSuffix(".") { message += "." }
        let label = context.err.apply(.danger, to: "Error:")
        for line in errorLines(message, label: label, capabilities: context.capabilities) {
            context.console.errors.writeLine(line)
        }
        if context.json {
            context.printJSON(.object(JSONObject([
                ("error", .string(message)),
                ("exit_code", .int(Int64(code.rawValue))),
            ])))
        }
        return code
    }

    /// Whether `--json` is among `arguments` (read as they are: a usage error means they
    /// could not be parsed, and a script asking for JSON still gets it).
    private static func wantsJSON(_ arguments: [CommandLineArgument]) -> Bool {
        arguments.prefix { $0.text != "--" }.contains { $0.text == "--json" }
    }

    /// A usage error on stderr; with `json`, also `{"error":…,"exit_code":2}` on stdout.
    /// "Error: message" on a terminal wrapped at word boundaries to its width, the later
    /// lines under the message; one line when stderr is not a terminal (a log keeps each
    /// error on one line, for grep).
    static func errorLines(_ message: String, label: String, capabilities: TerminalCapabilities) -> [String] {
        guard capabilities.stderrIsTTY else { return ["\(label) \(message)"] }
        let indent = "Error: ".count
        let lines = DisplayWidth.wrap(message, width: max(20, capabilities.width - indent))
        return lines.enumerated().map { index, line in index == 0 ? "\(label) \(line)" : String(repeating: " ", count: indent) + line }
    }

    private static func printUsageError(_ error: UsageError, context: CommandContext, json: Bool) {
        var lines = error.lines()
        let message = lines.first.map { $0.hasPrefix("Error: ") ? String($0.dropFirst(7)) : $0 } ?? "usage error"
        if let first = lines.first, first.hasPrefix("Error: ") {
            lines[0] = context.err.apply(.danger, to: "Error:") + first.dropFirst(6)
        }
        for line in lines { context.console.errors.writeLine(line) }
        if json {
            context.printJSON(.object(JSONObject([("error", .string(message)),
                                                  ("exit_code", .int(Int64(ExitCode.usage.rawValue)))])), pretty: false)
        }
    }
}
