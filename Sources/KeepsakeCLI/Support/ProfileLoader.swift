import BackupCore
import Foundation
import KeepsakeConfig
import TerminalUI

/// Loads a profile for `keepsake run`, `keepsake schedule` and `--profile`; a configuration error is told
/// the way compilers do, one `Error: FILE:LINE:COLUMN: message` line per problem (`ErrorReport`).
enum ProfileLoader {
    // MARK: Options

    /// `--config FILE`, shared by the commands that read profiles.
    static let configOption = OptionSpec(.config, kind: .value(valueName: "file"),
                                         defaultDescription: "${XDG_CONFIG_HOME:-~/.config}/keepsake/config.toml",
                                         environment: "KEEPSAKE_CONFIG",
                                         help: "The configuration file that defines the profiles.")

    // MARK: Loading

    /// The configuration file's absolute path for a `--config` value, else `KEEPSAKE_CONFIG`
    /// (which `keepsake run` sets for its hooks), else the default.
    static func configPath(_ option: String?, environment: [String: String]) -> String {
        if let option, !option.isEmpty { return DestinationResolver.absolute(option) }
        if let fromEnvironment = environment["KEEPSAKE_CONFIG"], !fromEnvironment.isEmpty {
            return DestinationResolver.absolute(fromEnvironment)
        }
        return ConfigFile.defaultPath(environment: environment)
    }

    /// The file and the profile named `name`.
    /// - Throws: `ConfigError` naming every problem of the file.
    static func load(_ name: String, configOption: String?, context: CommandContext) throws -> (ConfigFile, Profile) {
        let config = try ConfigFile.load(path: configPath(configOption, environment: context.environment),
                                         environment: context.environment)
        let profile = try config.profile(named: name)
        warnIfSecretsAreExposed(profile, context: context)
        return (config, profile)
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
}

// MARK: - Option keys

extension OptionKey {
    static let config = OptionKey("config")
}
