import BackupCore
import Foundation
import KeepsakeAge
import KeepsakeConfig
import KeepsakeEncryption
import KeepsakeStorage
import KeepsakeSupport
import TerminalUI

/// The encryption options (age v1) and where their keys come from: public keys to encrypt
/// to, identity files and passphrases to read back with. Secrets are read from files or a
/// terminal prompt only, never from the command line or the environment's values.
enum KeyOptions {
    // MARK: Options

    static let recipient = OptionSpec(.recipient, short: "r", kind: .value(valueName: "age1…"), repeatable: true,
                                      help: "Encrypt the backup to this age public key. Only the matching identities can read it; this host needs none.")
    static let recipientsFile = OptionSpec(.recipientsFile, short: "R", kind: .value(valueName: "file"), repeatable: true,
                                           help: "Encrypt to the age public keys in this file, one per line (# comments), as age -R reads.",
                                           takesPath: true)
    static let passphrase = OptionSpec(.passphrase,
                                       help: "Encrypt with a passphrase (age's scrypt), asked for twice on the terminal.")
    static let passphraseFile = OptionSpec(.passphraseFile, kind: .value(valueName: "file"), environment: "KEEPSAKE_PASSPHRASE_FILE",
                                           help: "Read the passphrase from the first line of this file (mode 0600): encrypts a backup, or opens one.",
                                           takesPath: true)
    static let noEncryption = OptionSpec(.noEncryption,
                                         help: "Store this backup in the clear although this host's last backup there was encrypted.")
    static let identity = OptionSpec(.identity, short: "i", kind: .value(valueName: "file"), repeatable: true,
                                     environment: "KEEPSAKE_IDENTITY_FILE",
                                     help: "Open encrypted backups with the age identities in this file (keepsake keygen, age-keygen).",
                                     takesPath: true)

    /// The options of `backup`.
    static let writing = [recipient, recipientsFile, passphrase, passphraseFile, noEncryption]
    /// The options of the commands that read backups.
    static let reading = [identity, passphraseFile]
    /// `prune`'s: reading, and the public keys it may encrypt supplements to.
    static let pruning = reading + [
        OptionSpec(.recipient, short: "r", kind: .value(valueName: "age1…"), repeatable: true,
                   help: "A public key an encrypted backup's supplement may be encrypted to (with --identity, its own public key is one already)."),
        OptionSpec(.recipientsFile, short: "R", kind: .value(valueName: "file"), repeatable: true,
                   help: "Public keys supplements may be encrypted to, one per line, as age -R reads.", takesPath: true),
    ]

    // MARK: Encrypting

    /// How `backup` encrypts, from its options (and a profile's settings): nil for in the clear.
    static func encryption(_ arguments: ParsedArguments?, settings: Profile.EncryptionSettings = Profile.EncryptionSettings(),
                           context: CommandContext) throws -> AgeEncryption? {
        let recipients = try recipients(arguments, settings: settings, context: context)
        let passphraseFile = arguments?.value(.passphraseFile) ?? settings.passphraseFile
            ?? context.environment["KEEPSAKE_PASSPHRASE_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        let asks = arguments?.flag(.passphrase) ?? false
        if arguments?.flag(.noEncryption) == true && (!recipients.isEmpty || asks || arguments?.value(.passphraseFile) != nil) {
            throw EncryptionError.unusableKey("'--no-encryption' cannot go with '--recipient', '--recipients-file' or a passphrase")
        }
        if !recipients.isEmpty {
            if asks || arguments?.value(.passphraseFile) != nil || settings.passphraseFile != nil {
                throw EncryptionError.unusableKey("Give public keys (--recipient, --recipients-file) or a passphrase, not both: "
                    + "an age file is opened by one or the other")
            }
            var unique: [AgeRecipient] = []
            for recipient in recipients where !unique.contains(recipient) { unique.append(recipient) }
            return .recipients(unique)
        }
        if arguments?.flag(.noEncryption) == true { return nil }
        if let passphraseFile { return .passphrase(try readPassphrase(passphraseFile, context: context), workFactor: 18) }
        if asks {
            return .passphrase(try askPassphrase(confirm: true, render: context.err, noInput: context.noInput,
                                                 io: context.console.prompts()), workFactor: 18)
        }
        return nil
    }

    /// The public keys of `--recipient`, `--recipients-file` and a profile's settings, in
    /// the order given (what `backup` encrypts to, and what `prune` may encrypt supplements to).
    static func recipients(_ arguments: ParsedArguments?, settings: Profile.EncryptionSettings = Profile.EncryptionSettings(),
                           context: CommandContext) throws -> [AgeRecipient] {
        var recipients = settings.recipients
        for text in arguments?.values(.recipient) ?? [] {
            do {
                recipients.append(try AgeRecipient(parsing: text))
            } catch {
                throw EncryptionError.unusableKey(AgeRecipient.misuseMessage(text, where: "'--recipient <age1…>'"))
            }
        }
        for file in (arguments?.values(.recipientsFile) ?? []) + settings.recipientsFiles {
            let bytes = try readKeyFile(file, what: "recipients file", secret: false, context: context)
            do {
                recipients.append(contentsOf: try AgeKeyFile.parseRecipients(bytes, name: file))
            } catch {
                throw EncryptionError.unusableKey("The recipients file '\(file)' is unusable: \(error)")
            }
        }
        return recipients
    }

    // MARK: Decrypting

    /// The keys a reading command opens encrypted backups with: `--identity` files (else
    /// `KEEPSAKE_IDENTITY_FILE`, and a profile's), and a passphrase from `--passphrase-file`
    /// (else `KEEPSAKE_PASSPHRASE_FILE`) or, when an archive asks for one, the terminal.
    static func keyring(_ arguments: ParsedArguments?, identityFiles extra: [String] = [], passphraseFile profileFile: String? = nil,
                        context: CommandContext) throws -> AgeKeyring {
        var files = arguments?.values(.identity) ?? []
        if files.isEmpty, let fromEnvironment = context.environment["KEEPSAKE_IDENTITY_FILE"], !fromEnvironment.isEmpty {
            files = [fromEnvironment]
        }
        files += extra
        var identities: [AgeIdentity] = []
        for file in files {
            let bytes = try readKeyFile(file, what: "identity file", secret: true, context: context)
            do {
                identities.append(contentsOf: try AgeKeyFile.parseIdentities(bytes, name: file))
            } catch {
                throw EncryptionError.unusableKey("The identity file '\(file)' is unusable: \(error)")
            }
        }
        let passphraseFile = arguments?.value(.passphraseFile) ?? profileFile
            ?? context.environment["KEEPSAKE_PASSPHRASE_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        if let passphraseFile {
            let passphrase = try readPassphrase(passphraseFile, context: context)
            return AgeKeyring(identities: identities, passphrase: { passphrase })
        }
        let noInput = context.noInput
        let canAsk = !noInput && context.capabilities.stderrIsTTY
        guard canAsk else { return AgeKeyring(identities: identities) }
        let render = context.err
        let prompts = context.console.prompts
        return AgeKeyring(identities: identities, asks: true) {
            try askPassphrase(confirm: false, render: render, noInput: noInput, io: prompts())
        }
    }

    // MARK: Reading secrets

    /// The bytes of a key file; a warning when a secret one is readable by others. A file
    /// that cannot be read throws `failure` of why (by default, an encryption key's error).
    static func readKeyFile(_ path: String, what: String, secret: Bool, context: CommandContext,
                            failure: ((String) -> Error)? = nil) throws -> [UInt8] {
        let failure = failure ?? { EncryptionError.unusableKey("Cannot read the \(what) '\(path)': \($0)") }
        if secret { SecretHolding.begin() }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw failure(String(cString: strerror(errno)))
        }
        let file = FileByteSource(fd: fd, name: path)
        defer { file.close() }
        var info = stat()
        if secret, fstat(fd, &info) == 0, info.st_mode & 0o077 != 0 {
            context.warn("the \(what) '\(path)' can be read by others (mode \(String(info.st_mode & 0o777, radix: 8))); "
                + "run 'chmod 600 \(path)'")
        }
        do {
            return try file.readAll(limit: 1 << 20)
        } catch {
            throw failure("\(error)")
        }
    }

    /// The first line of a passphrase file (without its line ending).
    private static func readPassphrase(_ path: String, context: CommandContext) throws -> [UInt8] {
        let bytes = try readKeyFile(path, what: "passphrase file", secret: true, context: context)
        var line = Array(bytes.prefix { $0 != UInt8(ascii: "\n") })
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        guard !line.isEmpty else {
            throw EncryptionError.unusableKey("The passphrase file '\(path)' is empty: its first line is the passphrase")
        }
        return line
    }

    /// A passphrase typed on the terminal (twice when `confirm`), without echo.
    private static func askPassphrase(confirm: Bool, render: RenderContext, noInput: Bool, io: any PromptIO) throws -> [UInt8] {
        SecretHolding.begin()
        let field = Field.secret("Passphrase", confirm: confirm) { $0.isEmpty ? "The passphrase cannot be empty." : nil }
        do {
            return Array(try field.ask(using: io, context: render, noInput: noInput).utf8)
        } catch let error as PromptError {
            throw EncryptionError.unusableKey("A passphrase is needed and none can be asked for (\(error)); "
                + "give --passphrase-file FILE or set KEEPSAKE_PASSPHRASE_FILE")
        }
    }
}

// MARK: - Option keys

extension OptionKey {
    static let identity = OptionKey("identity")
    static let noEncryption = OptionKey("no-encryption")
    static let passphrase = OptionKey("passphrase")
    static let passphraseFile = OptionKey("passphrase-file")
    static let recipient = OptionKey("recipient")
    static let recipientsFile = OptionKey("recipients-file")
}
