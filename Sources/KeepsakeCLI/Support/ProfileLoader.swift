import BackupCore
import Foundation
import TerminalUI

/// Loads a profile for `keepsake run` and `keepsake schedule`, printing configuration errors
/// the way compilers do: one `Error: FILE:LINE:COLUMN: message` line per problem on stderr.
enum ProfileLoader {
    // MARK: Options

    /// `--config FILE`, shared by the commands that read profiles.
    static let configOption = OptionSpec(long: "config", kind: .value(valueName: "file"),
                                         defaultDescription: "${XDG_CONFIG_HOME:-~/.config}/keepsake/config.toml",
                                         help: "The configuration file that defines the profiles.")

    // MARK: Loading

    /// The configuration file's absolute path for a `--config` value (the default when nil).
    static func configPath(_ option: String?, environment: [String: String]) -> String {
        guard let option, !option.isEmpty else { return ConfigFile.defaultPath(environment: environment) }
        return DestinationResolver.absolute(option)
    }

    /// The file and the profile named `name`, or nil after printing why not.
    static func load(_ name: String, configOption: String?, context: CommandContext) -> (ConfigFile, Profile)? {
        do {
            let config = try ConfigFile.load(path: configPath(configOption, environment: context.environment),
                                             environment: context.environment)
            return (config, try config.profile(named: name))
        } catch {
            report(error, context: context)
            return nil
        }
    }

    // MARK: Reporting

    /// Prints a configuration error on stderr (and, with `--json`, a JSON document with the
    /// error and exit code 1 on stdout).
    static func report(_ error: ConfigError, context: CommandContext) {
        let label = context.err.apply(.danger, to: "Error:")
        // Every problem is one line; the missing-file message goes on with an example to copy.
        let lines = error.description.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, line) in lines.enumerated() {
            let isProblem = error.kind == .fileMissing ? index == 0 : !line.isEmpty
            _ = ConsoleWriter.standardError.writeLine(isProblem ? "\(label) \(line)" : String(line))
        }
        if context.json {
            context.printJSON(.object(JSONObject([
                ("error", .string(error.description)),
                ("exit_code", .int(Int64(ExitCode.failure.rawValue))),
            ])))
        }
    }
}
