import BackupCore
import Foundation
import KeepsakeAge
import KeepsakeJSON
import KeepsakeSigning
import TerminalUI

/// `keepsake keygen [--output FILE]`: a new age X25519 identity, in the file format of
/// `age-keygen` (so `age -d -i FILE` reads it), and its public key for `--recipient`. With
/// `--signing`, a new Ed25519 signing key (PKCS#8 PEM, as `openssl genpkey` writes it) and
/// its public key for `--signed-by`.
struct KeygenCommand: KeepsakeCommand {
    // MARK: Spec

    static let spec = CommandSpec(
        name: "keygen",
        abstract: "Make an age identity (a secret key) for encrypted backups, or a signing key, and print its public key.",
        discussion: "Backups encrypted with '--recipient age1…' can be read only with the identity that key belongs to: keep the identity file away from the hosts that make the backups (they need only the public key), and keep a copy somewhere safe — without it the backups cannot be read. The file is the same as age-keygen writes; age -d -i FILE reads the archives too. A signing key (--signing) is the other way round: it stays on the host that makes the backups (backup --signing-key FILE), and whoever restores checks them with its public key (restore --signed-by ed25519:…), which refuses a backup anyone else wrote. The file is a PEM key as openssl genpkey writes it.",
        arguments: [],
        options: [
            OptionSpec(.output, short: "o", kind: .value(valueName: "file"),
                       help: "Write the identity to this new file (mode 0600; an existing file is never replaced) and print only the public key.",
                       takesPath: true),
            OptionSpec(.signing, help: "Make a signing key instead: backups made with --signing-key FILE can then be proved to come from this host with --signed-by and the public key printed (ed25519:…)."),
        ] + CommonOptions.global,
        examples: [
            .init(command: "keepsake keygen --output ~/keepsake-identity.txt",
                  explanation: "Make an identity; the public key (age1…) is printed for --recipient."),
            .init(command: "keepsake restore latest --identity ~/keepsake-identity.txt --target /tmp/restore",
                  explanation: "Restore an encrypted backup with it."),
            .init(command: "keepsake keygen --signing --output /etc/keepsake/signing-key.pem",
                  explanation: "Make a signing key for 'backup --signing-key'; the public key (ed25519:…) is printed for --signed-by."),
        ]
    )

    // MARK: Validated options

    private let output: String?
    /// `--signing`: an Ed25519 signing key rather than an age identity.
    private let signing: Bool

    init(arguments: ParsedArguments, context: CommandContext) throws {
        // The spec takes no positionals: the parser refuses any.
        output = arguments.value(.output)
        signing = arguments.flag(.signing)
        if output == nil && context.json {
            throw UsageError.custom("'--json' needs '--output FILE': the \(signing ? "signing key" : "identity") is a secret and is "
                                    + "never printed as JSON.", command: Self.spec)
        }
    }

    // MARK: Running

    func run(context: CommandContext) throws -> ExitCode {
        if signing {
            let key = try SigningKey.generate()
            let publicKey = key.publicKey.encoded
            return try deliver(key.fileText(created: Date()), publicKey: publicKey, json: ("signing_public_key", "signing_key_file"),
                               context: context) { output in
                "Wrote the signing key to \(output) (mode 0600). Back up with --signing-key \(output) on this host only; "
                    + "restore anywhere with --signed-by \(publicKey), which refuses backups this key did not sign."
            }
        }
        let identity = try AgeIdentity.generate()
        let recipient = identity.recipient.encoded
        return try deliver(AgeKeyFile.render(identity, created: Date()), publicKey: recipient, json: ("recipient", "identity_file"),
                           context: context) { output in
            "Wrote the identity to \(output) (mode 0600). Back up with --recipient \(recipient); "
                + "restore with --identity \(output). Keep a copy of it somewhere safe."
        }
    }

    /// Hands a new key out: as age-keygen does, the key file on stdout and its public key on
    /// stderr; with `--output`, the file written (mode 0600) and the public key on stdout, or
    /// with `--json` both named under `json`'s keys; `note` says what to do with the file.
    private func deliver(_ text: String, publicKey: String, json keys: (publicKey: String, file: String),
                         context: CommandContext, note: (String) -> String) throws -> ExitCode {
        guard let output else {
            warnIfStandardOutputIsReadable(context: context)
            context.printText(text)
            if !context.quiet { context.messageLine("Public key: \(publicKey)") }
            return .success
        }
        try writeSecretFile(text, to: output)
        if context.json {
            context.printJSON(.object(JSONObject([(keys.publicKey, .string(publicKey)), (keys.file, .string(output)),
                                                 ("exit_code", .int(0))])))
        } else {
            context.printLine(publicKey)
            context.note(note(output))
        }
        return .success
    }

    /// Writes a secret to the new file `output` (mode 0600, never over an existing file).
    private func writeSecretFile(_ text: String, to output: String) throws {
        let fd = open(output, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            if code == EEXIST {
                throw EngineError.invalidRequest("'\(output)' already exists; keygen never replaces a file (it may hold the only "
                    + "key to your backups). Give another --output, or move that file away first")
            }
            throw EngineError.invalidRequest("Cannot create '\(output)': \(String(cString: strerror(code)))")
        }
        // The mode asked for at creation is masked by the umask; set it on the descriptor.
        fchmod(fd, 0o600)
        let bytes = Array(text.utf8)
        var written = 0
        var failure: Int32 = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { buffer in
                write(fd, buffer.baseAddress.map { $0 + written }, bytes.count - written)
            }
            if count < 0 {
                if errno == EINTR { continue }
                failure = errno
                break
            }
            written += count
        }
        if failure == 0 && fsync(fd) != 0 { failure = errno }
        close(fd)
        if failure != 0 {
            unlink(output)
            throw EngineError.invalidRequest("Cannot write '\(output)': \(String(cString: strerror(failure)))")
        }
    }
}

// MARK: - Redirected output

extension KeygenCommand {
    /// `keepsake keygen > key.txt` makes the file the shell's way, readable by others under
    /// the usual umask: said at once, before the secret is written, with the fix.
    private func warnIfStandardOutputIsReadable(context: CommandContext) {
        var info = stat()
        guard let fd = context.console.output.underlyingDescriptor, fstat(fd, &info) == 0,
              info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o077 != 0 else { return }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        let name = length > 0 ? String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "the file"
        let mode = String(info.st_mode & 0o777, radix: 8)
        context.warn("standard output is \(name), which others can read (mode \(mode)), and the key written there is a secret: "
            + "run 'chmod 600 \(PasteableCommands.shellWord(name))' now, or make keys with 'keepsake keygen --output FILE' (mode 0600)")
    }
}

// MARK: - Option keys

extension OptionKey {
    static let output = OptionKey("output")
    static let signing = OptionKey("signing")
}
