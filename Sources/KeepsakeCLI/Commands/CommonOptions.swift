import BackupCore
import Foundation
import KeepsakeS3
import KeepsakeStorage
import TerminalUI

/// Options every command accepts, and the ones several share.
enum CommonOptions {
    // MARK: Everywhere

    static let json = OptionSpec(.json, help: "Print one JSON document on stdout instead of text.")
    static let quiet = OptionSpec(.quiet, short: "q", help: "Print nothing but errors and warnings.")
    static let color = OptionSpec(.color, kind: .value(valueName: "when"),
                                  allowedValues: ColorMode.allCases.map(\.rawValue), defaultDescription: "auto",
                                  help: "Colour and styling: auto (only on a terminal, unless NO_COLOR or TERM=dumb), always, or never.")
    static let noInput = OptionSpec(.noInput, help: "Never prompt; a missing answer is an error instead.")

    /// The options every command has, help last.
    static let global: [OptionSpec] = [json, quiet, color, noInput, .help]

    // MARK: Shared

    static let dest = OptionSpec(.dest, short: "d", kind: .value(valueName: "where"),
                                 defaultDescription: "${XDG_DATA_HOME:-~/.local/share}/keepsake/backups",
                                 environment: "KEEPSAKE_DEST",
                                 help: "Where the backups are: a folder, s3://BUCKET/PREFIX, or rclone:REMOTE:PATH.")
    static let s3Endpoint = OptionSpec(.s3Endpoint, kind: .value(valueName: "url"), defaultDescription: "AWS",
                                       environment: "KEEPSAKE_S3_ENDPOINT",
                                       help: "The S3-compatible server for s3:// destinations (http://127.0.0.1:8333); path-style addressing.")
    static let lockWait = OptionSpec(.lockWait, kind: .value(valueName: "time"), defaultDescription: "0 (fail at once)",
                                     help: "When another run holds the destination, wait this long for it (900, 90s, 15min, 2h) before exit 5.")

    /// Checks the options whose values every command reads the same way, before the
    /// command runs: a malformed `--s3-endpoint` is a usage error even when the destination
    /// turns out not to be on S3.
    static func validate(_ arguments: ParsedArguments, command: CommandSpec) throws {
        if let endpoint = arguments.value(.s3Endpoint), let problem = S3Configuration.endpointProblem(endpoint) {
            throw UsageError.custom("The value '\(S3Configuration.redacted(endpoint))' is invalid for '--s3-endpoint <url>': "
                + "\(problem).", command: command)
        }
    }

    /// `--lock-wait`'s seconds; a usage error for a value that is not a wait.
    static func lockWaitSeconds(_ arguments: ParsedArguments, command: CommandSpec) throws -> TimeInterval {
        guard let text = arguments.value(.lockWait) else { return 0 }
        guard let seconds = LockWait.parse(text) else {
            throw UsageError.custom("The value '\(text)' is invalid for '--lock-wait <time>'. Give \(LockWait.expected).", command: command)
        }
        return seconds
    }

    static let host = OptionSpec(.host, kind: .value(valueName: "name"), defaultDescription: "this host",
                                 help: "Act on the backups this host made (hosts sharing a destination keep their own chains).")
    static let source = OptionSpec(.source, kind: .value(valueName: "path"), defaultDescription: "any",
                                   help: "Only backups of this source (or of a source holding this path): 'latest' is the newest of them.",
                                   takesPath: true)
    /// `--host` where the default is every host (list, find, diff).
    static let hostFilter = OptionSpec(.host, kind: .value(valueName: "name"), defaultDescription: "every host",
                                       help: "Only the backups this host made; 'latest' is its newest.")
    static let allHosts = OptionSpec(.allHosts, help: "Act on the backups of every host in the destination.")
    static let progress = OptionSpec(.progress,
                                     help: "Report progress even when stderr is not a terminal: plain lines every few seconds (JSON Lines with --json).")
}

// MARK: - Option keys

extension OptionKey {
    static let allHosts = OptionKey("all-hosts")
    static let color = OptionKey("color")
    static let dest = OptionKey("dest")
    static let dryRun = OptionKey("dry-run")
    static let host = OptionKey("host")
    static let json = OptionKey("json")
    static let lockWait = OptionKey("lock-wait")
    static let noInput = OptionKey("no-input")
    static let progress = OptionKey("progress")
    static let quiet = OptionKey("quiet")
    static let s3Endpoint = OptionKey("s3-endpoint")
    static let source = OptionKey("source")
}
