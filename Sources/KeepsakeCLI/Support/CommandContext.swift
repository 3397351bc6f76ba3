import BackupCore
import Foundation
import KeepsakeEncryption
import KeepsakeJSON
import KeepsakeModel
import KeepsakeRclone
import KeepsakeS3
import KeepsakeStorage
import KeepsakeSupport
import TerminalUI

/// What every command needs from its surroundings: the terminal, the global options,
/// the environment, and the ways to print (all of them through `console`).
final class CommandContext {
    // MARK: Settings

    /// Where output goes and how prompts are asked.
    let console: Console
    /// The terminal, with the command's `--color` applied.
    let capabilities: TerminalCapabilities
    let environment: [String: String]
    let json: Bool
    let quiet: Bool
    let noInput: Bool
    let cancellation: CancellationFlag
    let theme = Theme.standard

    /// Creates a context from the global options a command was given.
    init(arguments: ParsedArguments, environment: [String: String], console: Console, cancellation: CancellationFlag) {
        let mode = arguments.value(.color).flatMap(ColorMode.init(rawValue:)) ?? .auto
        self.console = console
        capabilities = console.terminal.with(colorMode: mode)
        self.environment = environment
        json = arguments.flag(.json)
        quiet = arguments.flag(.quiet)
        noInput = arguments.flag(.noInput)
        s3Endpoint = arguments.value(.s3Endpoint)
        pasteable = PasteableCommands(arguments)
        self.cancellation = cancellation
        // Keys given in the environment are in this process's memory from the start.
        if ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"].contains(where: { !(environment[$0] ?? "").isEmpty }) {
            SecretHolding.begin()
        }
    }

    /// Completes the commands messages name with the destination options given here.
    let pasteable: PasteableCommands

    /// `--s3-endpoint`, for s3:// destinations.
    let s3Endpoint: String?
    /// A profile's S3 settings (`keepsake run`), under `--s3-endpoint`.
    var s3Overrides = S3Configuration.Overrides()
    /// The keys encrypted backups are opened with (`--identity`, a passphrase); every
    /// destination this context opens reads through them.
    var keyring: AgeKeyring = .empty
    /// The plain-http endpoints already warned about (copy opens two destinations).
    private var warnedEndpoints = Set<String>()

    /// Where the change-detection cache of encrypted backups lives:
    /// `${XDG_CACHE_HOME:-~/.cache}/keepsake`.
    var cacheRoot: String {
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") { return cache + "/keepsake" }
        let home = DestinationResolver.homeFolder(environment: environment) ?? NSHomeDirectory()
        return home + "/.cache/keepsake"
    }

    // MARK: Rendering contexts

    /// How to render for standard output.
    /// Piped output is not cut to 80 columns (unless COLUMNS says so): scripts get whole values.
    var out: RenderContext {
        let context = capabilities.renderContext(for: .standardOutput, theme: theme)
        let piped = !capabilities.stdoutIsTTY && (environment["COLUMNS"] ?? "").isEmpty
        return piped ? context.withWidth(100_000) : context
    }
    /// How to render for standard error.
    var err: RenderContext { capabilities.renderContext(for: .standardError, theme: theme) }

    // MARK: Printing

    /// Data and results: standard output.
    func print(_ component: some Renderable) {
        console.output.write(component, in: out)
    }

    /// A command's summary card: a titled box, with the seed's drop shadow when stdout is
    /// styled (plain output stays plain: no shade glyphs in logs).
    func summaryCard(title: String, content: [any Renderable]) -> any Renderable {
        let box = Box(title: title, content: content)
        return out.colorEnabled ? box.shadow() : box
    }

    /// A plain line on standard output.
    func printLine(_ text: String) {
        console.output.writeLine(text)
    }

    /// Text on standard output as it is (no newline added): a listing written in pieces.
    func printText(_ text: String) {
        console.output.write(text)
    }

    /// A JSON document on standard output: indented for a person on a terminal unless
    /// `pretty` says otherwise.
    func printJSON(_ value: JSONValue, pretty: Bool? = nil) {
        console.output.writeLine(value.serialized(pretty: pretty ?? capabilities.stdoutIsTTY))
    }

    /// Messages: standard error.
    func message(_ component: some Renderable) {
        console.errors.write(component, in: err)
    }

    /// A line on standard error as it is.
    func messageLine(_ text: String) {
        console.errors.writeLine(text)
    }

    /// A warning line on standard error (shown even with `--quiet`).
    func warn(_ text: String) {
        labelled("warning:", role: .warning, pasteable.complete(text))
    }

    /// A hint on standard error about a choice made for the user (shown even with `--quiet`).
    func hint(_ text: String) {
        labelled("hint:", role: .warning, pasteable.complete(text))
    }

    /// A line on standard error about damaged data (shown even with `--quiet`).
    func damaged(_ text: String) {
        labelled("damaged:", role: .danger, pasteable.complete(text))
    }

    /// An informational line on standard error (hidden by `--quiet` and `--json`).
    func note(_ text: String) {
        guard !quiet, !json else { return }
        console.errors.writeLine(err.apply(.muted, to: DisplayWidth.singleLine(pasteable.complete(text))))
    }

    /// Tells a failure on standard error and, with `--json` (or `json`), as
    /// `{"error": …, "exit_code": N}` on standard output; returns its exit code.
    @discardableResult
    func report(_ report: ErrorReport, json: Bool? = nil) -> ExitCode {
        let report = report.completing(pasteable)
        for line in report.lines(in: err, wraps: capabilities.stderrIsTTY) {
            console.errors.writeLine(line)
        }
        if json ?? self.json { printJSON(report.json) }
        return report.code
    }

    /// `label text` on standard error, the label styled.
    /// Every warning, hint and damage line: what a destination or a server supplied (a lock
    /// record's host, an error message) may hold terminal escapes, shown as `?` instead.
    private func labelled(_ label: String, role: Theme.Role, _ text: String) {
        console.errors.writeLine("\(err.apply(role, to: label)) \(DisplayWidth.singleLine(text))")
    }

    // MARK: Destination

    /// The destination for a `--dest` value (else `KEEPSAKE_DEST`, else the default folder),
    /// as stored: a command that reads backups reads it with `reading(_:)`.
    func destination(_ option: String?) throws -> any WritableStorage {
        try backend(for: try DestinationResolver.address(option, environment: environment))
    }

    /// `storage` read with the keys `--identity`/`--passphrase-file` gave (none: encrypted
    /// objects then name the key they need).
    func reading(_ storage: any ReadableStorage) -> KeyedStorage {
        KeyedStorage(storage, keyring: keyring)
    }

    /// The backend that reaches `address`, as stored (no decryption).
    func backend(for address: DestinationAddress) throws -> any WritableStorage {
        switch address {
        case .localFolder(let path):
            return LocalFolderBackend(path: path)
        case .s3(let bucket, let prefix):
            var overrides = s3Overrides
            overrides.endpoint = s3Endpoint ?? overrides.endpoint
            // The keys are in memory from here on.
            SecretHolding.begin()
            let configuration = try S3Configuration.resolve(environment: environment, overrides: overrides)
            if S3Configuration.isPlainHTTPToAnotherMachine(configuration.endpoint), warnedEndpoints.insert(configuration.endpoint).inserted {
                warn("the S3 endpoint \(configuration.endpoint) is plain http:// on another machine: what is sent and received "
                    + "(archives, listings, the lock) can be read and changed on the way; use https://")
            }
            return try S3Backend(bucket: bucket, prefix: prefix, configuration: configuration, environment: environment,
                                 cancellation: cancellation)
        case .rclone(let remote, let path):
            return RcloneBackend(remote: remote, path: path, rclone: environment["KEEPSAKE_RCLONE"] ?? "rclone",
                                 environment: environment, cancellation: cancellation)
        }
    }

    /// Finds the backup a `BACKUP` argument names (see `BackupReference`), in the destination
    /// `--dest` names or as an archive file. A word read as a backup while a file of that
    /// name exists gets a hint saying how to reach the file.
    /// `latest` is the newest backup of `hosts`.
    /// With `source`, `latest` is the newest backup holding that path; without it, when the
    /// destination holds backups of other sources too, a note says which one `latest` is.
    func locate(_ argument: String, destinationOption: String?, hosts: HostSelection = .all,
                source: String? = nil) throws -> LocatedBackup {
        let (reference, shadowed) = BackupReference.interpret(argument, explicitDestination: destinationOption != nil)
        if shadowed {
            hint("'\(argument)' is read as a backup in the destination; write './\(argument)' for the file of that name here.")
        }
        var locator = locator(destinationOption, hosts: hosts)
        locator.source = source
        let located = try locator.locate(reference)
        if !located.otherSourceSets.isEmpty, let item = located.item, let sources = item.summary?.sources {
            let others = located.otherSourceSets.prefix(3).map { $0.joined(separator: " ") }.joined(separator: "; ")
            note("'latest' is \(item.id), the newest backup of \(sources.joined(separator: " ")); this destination also holds "
                + "backups of \(others)\(located.otherSourceSets.count > 3 ? " and more" : ""): "
                + "give --source PATH for those.")
        }
        for passed in located.passedOver.suffix(3) {
            let why = passed.isMisnamed ? passed.problem ?? "it is misnamed"
                : "it is dated after this machine's clock (\(Timestamp.iso8601(locator.now)))"
            warn("'latest' is not backup \(passed.id), though it is newer: \(why). Run 'keepsake verify'.")
        }
        return located
    }

    /// A locator that opens the destination only when a reference needs it.
    func locator(_ destinationOption: String?, hosts: HostSelection = .all) -> BackupLocator {
        var locator = BackupLocator(hosts: hosts, remote: { try self.backend(for: $0) }) { try self.destination(destinationOption) }
        locator.keyring = keyring
        // The test clock too (a debug build's KEEPSAKE_NOW), so that backups a test dated in
        // its future are not taken for planted ones.
        locator.now = (try? CommandClock.now(environment: environment, command: nil)) ?? Date()
        return locator
    }
}
