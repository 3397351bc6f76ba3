import BackupCore
import Foundation
import KeepsakeJSON

/// `keepsake help --json` and `keepsake COMMAND --help --json`: the commands, their
/// arguments and options, and the exit codes as data, for scripts and tools that wrap
/// Keepsake (the same specs the help screens, the manual page and the completions come from).
enum HelpJSON {
    // MARK: Documents

    /// Every command (name and abstract), the options every command takes, the exit codes
    /// and the environment.
    static func overview() -> JSONValue {
        .object(JSONObject([
            ("name", .string("keepsake")),
            ("version", .string(KeepsakeCLI.version)),
            ("abstract", .string(KeepsakeCLI.abstract)),
            ("commands", .array(CommandRegistry.all.map { command in
                .object(JSONObject([("name", .string(command.spec.name)), ("abstract", .string(command.spec.abstract))]))
            })),
            ("global_options", .array(CommonOptions.global.map(option))),
            ("exit_codes", .array(ExitCode.allCases.map { code in
                .object(JSONObject([("code", .int(Int64(code.rawValue))), ("meaning", .string(code.meaning))]))
            })),
            ("environment", .array(HelpCommand.environment.map { variable in
                .object(JSONObject([("name", .string(variable.0)), ("meaning", .string(variable.1))]))
            })),
            ("exit_code", .int(0)),
        ]))
    }

    /// One command: its usage, arguments, options and examples.
    static func command(_ spec: CommandSpec) -> JSONValue {
        .object(JSONObject([
            ("name", .string(spec.name)),
            ("abstract", .string(spec.abstract)),
            ("discussion", .string(spec.discussion)),
            ("usage", .string(spec.usage())),
            ("arguments", .array(spec.arguments.map { argument in
                .object(JSONObject([
                    ("name", .string(argument.name)),
                    ("help", .string(argument.help)),
                    ("optional", .bool(argument.optional)),
                    ("repeating", .bool(argument.repeating)),
                ]))
            })),
            ("options", .array(spec.options.filter { !$0.hidden }.map(option))),
            ("examples", .array(spec.examples.map { example in
                .object(JSONObject([("command", .string(example.command)), ("explanation", .string(example.explanation))]))
            })),
            ("exit_code", .int(0)),
        ]))
    }

    // MARK: Parts

    /// One option: `--long`, `-s`, the value it takes, its default, variable and help.
    private static func option(_ option: OptionSpec) -> JSONValue {
        var valueName: JSONValue = .null
        if case .value(let name) = option.kind { valueName = .string(name) }
        return .object(JSONObject([
            ("long", .string("--" + option.long)),
            ("short", option.short.map { .string("-" + String($0)) } ?? .null),
            ("value", valueName),
            ("allowed_values", option.allowedValues.map { .array($0.map { .string($0) }) } ?? .null),
            ("default", option.defaultDescription.map { .string($0) } ?? .null),
            ("environment", option.environment.map { .string($0) } ?? .null),
            ("repeatable", .bool(option.repeatable)),
            ("help", .string(option.help)),
        ]))
    }
}
