import BackupCore
import Foundation
import KeepsakeJSON
import KeepsakeSupport
import TerminalUI

/// The `keepsake` command line: parses, dispatches to a command, and reports every failure
/// (`ErrorReport`) with its documented exit code.
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
        ProcessMemory.mapLargeBlocks()
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
        // Before the arguments are parsed, only `--color` is read from them, as typed.
        let bare = CommandContext(arguments: ParsedArguments(optionValues: colorChoice(arguments)), environment: environment,
                                  console: console, cancellation: SignalHandling.cancellation)
        guard let first = arguments.first?.text else {
            HelpCommand.printShortUsage(context: bare)
            return .success
        }
        switch first {
        case "--version", "-V", "version":
            if arguments.dropFirst().contains(where: { $0.text == "--json" }) {
                bare.printJSON(.object(JSONObject([("name", .string("keepsake")), ("version", .string(version)), ("exit_code", .int(0))])),
                               pretty: false)
            } else {
                bare.printLine("keepsake \(version)")
            }
            return .success
        case "--help", "-h":
            if wantsJSON(arguments) {
                bare.printJSON(HelpJSON.overview())
            } else {
                HelpCommand.printTopLevel(context: bare)
            }
            return .success
        default:
            break
        }
        guard let command = CommandRegistry.command(named: first) else {
            let error = ArgumentParser.looksLikeOption(first)
                ? UsageError(.unknownOption(first, suggestion: nil), command: nil)
                : UsageError.unknownCommand(first, known: CommandRegistry.all.map { $0.spec.name })
            return bare.report(ErrorReport(error), json: wantsJSON(arguments))
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
            return bare.report(ErrorReport(error), json: wantsJSON(arguments))
        }
        let context = CommandContext(arguments: parsed, environment: environment, console: console,
                                     cancellation: SignalHandling.cancellation)
        if parsed.flag(.help) {
            HelpCommand.printHelp(for: command.spec, context: context)
            return .success
        }
        do {
            try CommonOptions.validate(parsed, command: command.spec)
            let instance = try command.init(arguments: parsed, context: context)
            return try instance.run(context: context)
        } catch {
            return context.report(ErrorReport(error))
        }
    }

    /// `--color WHEN` or `--color=WHEN` among `arguments` as typed, so a usage error obeys it too.
    private static func colorChoice(_ arguments: [CommandLineArgument]) -> [String: [String]] {
        let words = arguments.prefix { $0.text != "--" }.map(\.text)
        for (index, word) in words.enumerated().reversed() {
            if word.hasPrefix("--color=") { return [OptionKey.color.name: [String(word.dropFirst(8))]] }
            if word == "--color", index + 1 < words.count { return [OptionKey.color.name: [words[index + 1]]] }
        }
        return [:]
    }

    /// Whether `--json` is among `arguments` (read as they are: a usage error means they
    /// could not be parsed, and a script asking for JSON still gets it).
    private static func wantsJSON(_ arguments: [CommandLineArgument]) -> Bool {
        arguments.prefix { $0.text != "--" }.contains { $0.text == "--json" }
    }
}
