import BackupCore
import Foundation
import KeepsakeConfig

/// Where a command's backups are and how to open them: `--profile NAME` (else
/// `KEEPSAKE_PROFILE`) of the configuration file brings its destination, S3 settings and
/// keys; `--dest`, `--s3-endpoint`, `--identity` and `--passphrase-file` given on the command
/// line win over the profile's values.
///
/// Every command that reads or writes a destination (list, find, diff, restore, verify,
/// prune, copy, repair) resolves it once, in its `init`, so that the context opens every
/// destination with the profile's S3 settings and keys.
struct DestinationSelection {
    // MARK: Options

    /// `--profile NAME`.
    static let profileOption = OptionSpec(.profile, kind: .value(valueName: "name"), environment: "KEEPSAKE_PROFILE",
                                          help: "Use this profile of the configuration file: its destination, S3 settings and keys (options given here win).")

    /// The options of a command that opens one destination: where, and through which profile.
    static let options = [CommonOptions.dest, CommonOptions.s3Endpoint, profileOption, ProfileLoader.configOption]

    // MARK: Resolved

    /// The profile named by `--profile` or `KEEPSAKE_PROFILE`; nil when neither names one.
    let profile: Profile?
    /// `--dest` (or `destinationKey`'s option), else the profile's destination; nil for
    /// `KEEPSAKE_DEST` or the default destination.
    let destination: String?

    /// `--host`, else the profile's `host`; nil for this machine (or every host, where
    /// that is the command's default).
    func host(_ arguments: ParsedArguments) -> String? {
        arguments.value(.host) ?? profile?.host
    }

    // MARK: Resolving

    /// Loads the profile (when one is named), applies its S3 settings to `context` and, when
    /// `opensBackups`, sets the context's keyring from `--identity`/`--passphrase-file` (and
    /// their variables) together with the profile's identities and passphrase file.
    ///
    /// - Parameter destinationKey: the option that names the destination (`--from` for copy).
    /// - Throws: `ConfigError` when the file or the profile cannot be used (naming
    ///   `KEEPSAKE_PROFILE` when the name came from there); the keyring's errors.
    static func resolve(_ arguments: ParsedArguments, context: CommandContext, destinationKey: OptionKey = .dest,
                        opensBackups: Bool = true) throws -> DestinationSelection {
        let profile = try loadProfile(arguments, context: context)
        if let profile { context.s3Overrides = profile.s3 }
        if opensBackups {
            context.keyring = try KeyOptions.keyring(arguments, identityFiles: profile?.encryption.identityFiles ?? [],
                                                     passphraseFile: profile?.encryption.passphraseFile, context: context)
        }
        let given = arguments.value(destinationKey).flatMap { $0.isEmpty ? nil : $0 }
        return DestinationSelection(profile: profile, destination: given ?? profile?.destination)
    }

    /// The profile `--profile` (else `KEEPSAKE_PROFILE`) names, from `--config` (else
    /// `KEEPSAKE_CONFIG`, else the default file).
    private static func loadProfile(_ arguments: ParsedArguments, context: CommandContext) throws -> Profile? {
        let fromEnvironment = context.environment["KEEPSAKE_PROFILE"].flatMap { $0.isEmpty ? nil : $0 }
        guard let name = arguments.value(.profile) ?? fromEnvironment else { return nil }
        do {
            return try ProfileLoader.load(name, configOption: arguments.value(.config), context: context).1
        } catch let error as ConfigError where arguments.value(.profile) == nil && error.kind == .profileNotFound {
            // A name nobody typed must say where it came from.
            throw ConfigError(file: error.file, kind: error.kind,
                              message: "\(error.description) (the profile is named by KEEPSAKE_PROFILE; give --profile NAME, "
                                + "or unset KEEPSAKE_PROFILE to use --dest or the default destination)")
        }
    }
}

// MARK: - Option keys

extension OptionKey {
    static let profile = OptionKey("profile")
}
