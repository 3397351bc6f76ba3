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
            let profile = try config.profile(named: name)
            warnIfSecretsAreExposed(profile, context: context)
            return (config, profile)
        } catch {
            report(error, context: context)
            return nil
        }
    }

    /// A configuration file holding a secret (`aws-secret-access-key`) that others may read
    /// gets a warning naming it and the fix: the secret is as safe as the file.
    private static func warnIfSecretsAreExposed(_ profile: Profile, context: CommandContext) {
        guard profile.s3.secretAccessKey != nil || profile.s3.sessionToken != nil else { return }
        var info = stat()
        guard stat(profile.file, &info) == 0, info.st_mode & 0o077 != 0 else { return }
        context.warn("\(profile.file) holds an S3 secret (aws-secret-access-key) and others may read it "
            + "(mode \(String(info.st_mode & 0o777, radix: 8))); run 'chmod 600 \(profile.file)'")
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
            context.messageLine(isProblem ? "\(label) \(line)" : String(line))
        }
        if context.json {
            context.printJSON(.object(JSONObject([
                ("error", .string(error.description)),
                ("exit_code", .int(Int64(ExitCode.failure.rawValue))),
            ])))
        }
    }
}
