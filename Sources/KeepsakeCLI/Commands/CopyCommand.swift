import BackupCore
import Foundation
import KeepsakeModel
import KeepsakeSupport
import TerminalUI

/// `keepsake copy`: backups from one destination to another, verified on the way.
struct CopyCommand: KeepsakeCommand {
    // MARK: Spec

    static let spec = CommandSpec(
        name: "copy",
        abstract: "Copy backups to another destination (a second disk, a bucket), verified on the way.",
        discussion: "Each archive streams from --from to --to while its size and SHA-256 are checked against its manifest; the manifest is stored last, so a copy is listed only once whole and checked. Backups --to already holds are skipped, and an incremental backup brings the backups it relies on, so chains arrive whole. A damaged source backup is not copied (exit 4); the others are.",
        arguments: [ArgumentSpec(.backup, help: "Backup ids, unique prefixes or 'latest' (this host's newest); every backup when none.",
                                 optional: true, repeating: true)],
        options: [
            OptionSpec(.from, kind: .value(valueName: "where"), defaultDescription: "the default destination",
                       environment: "KEEPSAKE_DEST", help: "Where the backups are: a folder, s3://BUCKET/PREFIX, or rclone:REMOTE:PATH."),
            OptionSpec(.to, kind: .value(valueName: "where"), defaultDescription: "the profile's copy-to",
                       help: "Where to copy them (required without a profile that has one copy-to)."),
            CommonOptions.s3Endpoint,
            DestinationSelection.profileOption,
            ProfileLoader.configOption,
            CommonOptions.lockWait,
            CommonOptions.progress,
        ] + CommonOptions.global,
        examples: [
            .init(command: "keepsake copy --to s3://backups/laptop", explanation: "Copy every backup of the default destination to a bucket."),
            .init(command: "keepsake copy latest --from /mnt/usb/backups --to rclone:nas:keepsake",
                  explanation: "Copy the newest backup (and the chain it needs) from a USB disk to a NAS."),
            .init(command: "keepsake copy --profile home", explanation: "Copy every backup of profile 'home' to its copy-to destination."),
        ]
    )

    // MARK: Validated options

    private let references: [String]
    private let fromOption: String?
    private let toOption: String
    private let progress: Bool
    private let lockWait: TimeInterval
    /// Whose newest backup `latest` is: the profile's host, else this machine.
    private let latestHost: String

    init(arguments: ParsedArguments, context: CommandContext) throws {
        references = arguments.arguments(.backup)
        let selection = try DestinationSelection.resolve(arguments, context: context, destinationKey: .from, opensBackups: false)
        fromOption = selection.destination
        let copyTo = selection.profile?.copyTo ?? []
        latestHost = selection.profile?.host ?? HostIdentity.hostName
        if let to = arguments.value(.to), !to.isEmpty {
            toOption = to
        } else if copyTo.count == 1 {
            toOption = copyTo[0]
        } else if let profile = selection.profile, copyTo.count > 1 {
            throw UsageError.custom("Profile '\(profile.name)' copies to \(copyTo.count) destinations "
                + "(\(copyTo.joined(separator: ", "))); give one with '--to <where>'.", command: Self.spec)
        } else {
            throw UsageError.custom("Give the destination to copy to with '--to <where>' (a folder, s3://BUCKET/PREFIX, or rclone:REMOTE:PATH).",
                                    command: Self.spec)
        }
        progress = arguments.flag(.progress)
        lockWait = try CommonOptions.lockWaitSeconds(arguments, command: Self.spec)
    }

    // MARK: Running

    func run(context: CommandContext) throws -> ExitCode {
        let source = try context.destination(fromOption)
        let target = try context.destination(toOption)
        guard source.location != target.location else {
            throw UsageError.custom("'--from' and '--to' are both \(source.location); copy to another destination.", command: Self.spec)
        }
        // Copied as stored: no key is needed, nor read.
        let catalog = BackupCatalog(storage: source, keyring: .empty)
        var ids: [BackupID]?
        if !references.isEmpty {
            let now = try CommandClock.now(environment: context.environment, command: Self.spec)
            ids = try references.map { try catalog.resolve($0, hosts: $0 == "latest" ? .only(latestHost) : .all, now: now).id }
        }
        let presenter = EventPresenter(context: context, progress: progress)
        defer { presenter.finish() }
        let copier = BackupCopier(from: source, to: target, events: presenter, cancellation: context.cancellation)
        let result = try copier.copy(ids, lockWait: lockWait)
        presenter.finish()
        for problem in result.damaged where !context.json {
            context.damaged("\(problem)")
        }
        let code: ExitCode = result.damaged.isEmpty ? .success : .integrity
        if context.json {
            var object = CopyResultJSON.encode(result, after: [("from", .string(source.location)), ("to", .string(target.location))])
            object["exit_code"] = .int(Int64(code.rawValue))
            context.printJSON(.object(object))
        } else if !context.quiet {
            context.print(KeyValueList(items: [
                .init("From", source.location),
                .init("To", target.location),
                .init("Copied", "\(Units.count(result.copied.count, "backup")), \(Units.bytes(result.bytes)), every archive checked",
                      valueRole: .success),
                .init("Skipped", "\(Units.count(result.skipped.count, "backup")) already there"),
            ] + (result.damaged.isEmpty ? [] : [
                .init("Damaged", "\(Units.count(result.damaged.count, "backup")) not copied (see above)", valueRole: .danger),
            ]) + [
                .init("Time", Units.elapsed(result.elapsed)),
            ]))
        }
        return code
    }
}

// MARK: - Option keys

extension OptionKey {
    static let from = OptionKey("from")
    static let to = OptionKey("to")
}
