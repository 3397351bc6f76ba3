import BackupCore
import Foundation
import KeepsakeConfig
import KeepsakeSigning

/// The signing options: the secret key `backup` signs with, and the public key the commands
/// that read backups check them against. The secret is read from a file only.
enum SigningOptions {
    // MARK: Options

    static let signingKey = OptionSpec(.signingKey, kind: .value(valueName: "file"),
                                       help: "Sign the backup with this key (keepsake keygen --signing; mode 0600), so a restore can prove it was made here.",
                                       takesPath: true)
    static let signedBy = OptionSpec(.signedBy, kind: .value(valueName: "key"),
                                     help: "Use only backups signed by this public key ('ed25519:…', or a file holding it); others stop the command (exit 7).")

    // MARK: Reading

    /// The key `backup` signs with: `--signing-key`, else the profile's `signing-key`; nil for none.
    static func signingKey(_ arguments: ParsedArguments?, profile: Profile.SigningSettings = Profile.SigningSettings(),
                           context: CommandContext) throws -> SigningKey? {
        guard let path = arguments?.value(.signingKey) ?? profile.keyFile else { return nil }
        var bytes = try KeyOptions.readKeyFile(path, what: "signing key", secret: true, context: context) { reason in
            SigningError.unusableSigningKey(path: path, reason: "it cannot be read (\(reason))")
        }
        defer { for index in bytes.indices { bytes[index] = 0 } }
        return try SigningKey(fileBytes: bytes, path: path)
    }

    /// The key backups must be signed by: `--signed-by`, else the profile's `signed-by`; nil
    /// when neither is given.
    static func signedBy(_ arguments: ParsedArguments?, profile: Profile.SigningSettings = Profile.SigningSettings()) throws -> SigningPublicKey? {
        guard let value = arguments?.value(.signedBy) ?? profile.signedBy else { return nil }
        return try SigningPublicKey.load(value)
    }
}

// MARK: - Option keys

extension OptionKey {
    static let signingKey = OptionKey("signing-key")
    static let signedBy = OptionKey("signed-by")
}
