import BackupCore
import Foundation
import TerminalUI

/// `keepsake restore`: all or part of a backup, from the destination or a lone archive file.
struct RestoreCommand: KeepsakeCommand {
    // MARK: Spec

    static let spec = CommandSpec(
        name: "restore",
        abstract: "Restore all or part of a backup, or of an archive file.",
        discussion: "Every file is written under a temporary name and renamed into place only when its SHA-256 matches the manifest; damaged content never lands (exit 4). Nothing is written outside the target: absolute paths, '..' and paths through symlinks are refused. Existing files are kept unless --overwrite says otherwise. Plain tar archives (tar, tar.gz, tar.zst, tar.xz) restore too, without a manifest to check against.",
        arguments: [
            ArgumentSpec(name: "BACKUP", help: "A backup id, unique id prefix, 'latest', or an archive file. On a terminal, leave it out to pick a backup from a list.",
                         optional: true),
            ArgumentSpec(name: "PATH", help: "Restore only these paths (a folder brings its contents; patterns like '*.conf' allowed).",
                         optional: true, repeating: true, takesPath: true),
        ],
        options: [
            CommonOptions.dest, CommonOptions.s3Endpoint,
            OptionSpec(long: "target", short: "C", kind: .value(valueName: "dir"), defaultDescription: "the current folder",
                       help: "The folder to restore into; created when missing. Paths inside keep their full original path.",
                       takesPath: true),
            OptionSpec(long: "overwrite", kind: .value(valueName: "when"),
                       allowedValues: OverwritePolicy.allCases.map(\.rawValue), defaultDescription: "never",
                       help: "Replace existing files: never, if-newer (the backup's copy is newer), or always."),
            OptionSpec(long: "dry-run", short: "n", help: "Read and check the archive, list what would be restored, write nothing."),
            OptionSpec(long: "same-owner", help: "As root: also restore setuid/setgid bits, device files and extended attributes outside user.* (security.capability and the like; owners are restored as root anyway)."),
            OptionSpec(long: "same-permissions", short: "p", help: "Give entries exactly their recorded permissions; without it, users other than root get them less the umask (as with tar)."),
            CommonOptions.host,
            CommonOptions.allHosts,
            CommonOptions.progress,
        ] + KeyOptions.reading + CommonOptions.global,
        examples: [
            .init(command: "keepsake restore latest --target /tmp/restore", explanation: "Restore the newest backup into /tmp/restore."),
            .init(command: "keepsake restore 20261129 home/ana/notes.txt", explanation: "Restore one file of a backup into the current folder."),
            .init(command: "keepsake restore /media/usb/host_20261129T023000Z-3f9a1c2e.tar.zst --target /srv",
                  explanation: "Restore from an archive file, with no destination at all."),
        ]
    )

    // MARK: Validated options

    private let reference: String?
    private let request: RestoreRequest
    private let destinationOption: String?
    private let progress: Bool
    /// Whose backup `latest` (and the picker) means.
    private let hosts: HostSelection

    init(arguments: ParsedArguments, context: CommandContext) throws {
        context.keyring = try KeyOptions.keyring(arguments, context: context)
        reference = arguments.argument("BACKUP")
        if arguments.value("host") != nil && arguments.flag("all-hosts") {
            throw UsageError.custom("Give either '--host' or '--all-hosts', not both.", command: Self.spec)
        }
        hosts = HostSelection.from(host: arguments.value("host"), allHosts: arguments.flag("all-hosts"))
        if reference == nil && (!context.capabilities.canPrompt || context.noInput) {
            // Without a terminal to pick on, the backup must be named.
            throw UsageError(.missingArgument("BACKUP"), command: Self.spec)
        }
        var request = RestoreRequest(target: "", overwrite: arguments.value("overwrite").flatMap(OverwritePolicy.init(rawValue:)) ?? .never,
                                     dryRun: arguments.flag("dry-run"), restoreSpecialFiles: arguments.flag("same-owner"),
                                     samePermissions: geteuid() == 0 || arguments.flag("same-permissions"))
        // Paths go as bytes: a name need not be UTF-8.
        request.targetPath = DestinationResolver.absolute(arguments.path("target") ?? Array(".".utf8))
        request.selectionPaths = arguments.argumentPaths("PATH")
        self.request = request
        if arguments.flag("same-owner") && geteuid() != 0 {
            throw UsageError.custom("The option '--same-owner' needs root: only root can give files to other owners or restore setuid bits and device files.", command: Self.spec)
        }
        destinationOption = arguments.value("dest")
        progress = arguments.flag("progress")
        let patterns = request.selectionPaths.filter { $0.contains(where: { "*?[".utf8.contains($0) }) }
        if let pattern = patterns.first(where: { PathBytes.validString($0) == nil }) {
            throw UsageError(.notUTF8(PathBytes.display(pattern), argument: "PATH..."), command: Self.spec)
        }
        do {
            _ = try ExcludeRules(patterns: patterns.map { String(decoding: $0, as: UTF8.self) })
        } catch {
            throw UsageError.custom("\(error).", command: Self.spec)
        }
    }

    // MARK: Running

    func run(context: CommandContext) throws -> ExitCode {
        // A backup picked from the list is a backup, never a file of the same name.
        let backup = try reference.map { try context.locate($0, destinationOption: destinationOption, hosts: hosts) }
            ?? context.locator(destinationOption).locate(.backup(pickBackup(context: context)))
        let source = backup.label
        let presenter = EventPresenter(context: context, progress: progress)
        defer { presenter.finish() }
        let result = try Restorer(events: presenter, cancellation: context.cancellation).restore(backup, request: request)
        presenter.finish()
        if result.entryCount == 0 && result.skippedExisting == 0 && !request.selections.isEmpty && !result.hasIntegrityFailure {
            throw EngineError.invalidRequest("Nothing in \(source) matches \(request.selections.map { "'\($0)'" }.joined(separator: ", ")); run 'keepsake list \(source)' to see its paths.")
        }
        let code: ExitCode = result.hasIntegrityFailure ? .integrity : result.hasUnwrittenPaths ? .partial : .success
        if context.json {
            context.printJSON(json(result, source: source, code: code))
        } else {
            show(result, source: source, context: context)
        }
        return code
    }

    // MARK: Picking

    /// Lets the user choose a backup on the terminal, newest first.
    private func pickBackup(context: CommandContext) throws -> String {
        let storage = try context.destination(destinationOption)
        let items = try BackupCatalog(storage: storage).items().reversed().filter { item in
            item.summary.map { hosts.includes($0.host) } ?? false
        }
        guard !items.isEmpty else {
            throw EngineError.backupNotFound(reference: "latest", destination: storage.location)
        }
        context.message(Header(title: "Restore", subtitle: "Choose a backup from \(storage.location) to restore into \(request.target)"))
        let labels = items.map { item -> String in
            guard let summary = item.summary else { return item.id.rawValue }
            return "\(summary.id.rawValue)  \(Timestamp.localShort(summary.created))  "
                + "\(Units.count(Int(summary.fileCount), "file"))  \(Units.bytes(summary.originalBytes))  "
                + summary.sources.joined(separator: ", ")
        }
        do {
            let index = try Picker(title: "Backup", items: labels).choose(using: TerminalPromptIO(), context: context.err,
                                                                          noInput: context.noInput)
            return items[index].id.rawValue
        } catch PromptError.cancelled {
            throw EngineError.invalidRequest("Nothing was restored: the choice was cancelled.")
        }
    }

    // MARK: Output

    private func show(_ result: RestoreResult, source: String, context: CommandContext) {
        for problem in result.damaged {
            _ = ConsoleWriter.standardError.writeLine(context.err.apply(.danger, to: "damaged:") + " \(problem.path): \(problem.reason)")
        }
        for warning in result.warnings {
            context.warn("\(warning.path): \(warning.reason)")
        }
        if let problem = result.archiveProblem {
            _ = ConsoleWriter.standardError.writeLine(context.err.apply(.danger, to: "damaged:") + " \(problem)")
        }
        if request.dryRun && !context.quiet {
            for path in result.planned { context.printLine(path) }
        }
        guard !context.quiet else { return }
        var items: [KeyValueList.Item] = [
            .init("From", source),
            .init(request.dryRun ? "Would restore into" : "Into", request.target),
            .init("Restored", "\(Units.count(Int(result.files), "file")), \(Units.count(Int(result.directories), "folder")), "
                + "\(Units.count(Int(result.symlinks + result.hardlinks + result.other), "link or other", plural: "links and others")), "
                + Units.bytes(result.bytes)),
        ]
        if result.hasUnwrittenPaths {
            items.append(.init("Not written", "\(Units.count(result.unwrittenPaths, "path")) the target refused (see the warnings above)",
                               valueRole: .warning))
        }
        if result.skippedExisting > 0 {
            items.append(.init("Kept", "\(Units.count(Int(result.skippedExisting), "existing file")) (use --overwrite to replace them)"))
        }
        if result.plainTarball {
            items.append(.init("Checked", "no manifest in this archive: contents could not be verified", valueRole: .warning))
        } else if result.unverifiedFiles > 0 && result.archiveProblem != nil {
            items.append(.init("Checked", "the archive is damaged before its manifest: \(Units.count(Int(result.unverifiedFiles), "file")) could not be checked "
                + "and were restored as NAME\(Restorer.unverifiedSuffix); look at them before you trust them", valueRole: .warning))
        } else if result.unverifiedFiles > 0 {
            items.append(.init("Checked", "\(Units.count(Int(result.unverifiedFiles), "file")) restored without verification", valueRole: .warning))
        } else if result.verifiedAgainstManifest {
            items.append(.init("Checked", "every file matched its SHA-256", valueRole: .success))
        }
        if result.hasIntegrityFailure {
            items.append(.init("Damaged", "\(Units.count(result.damaged.count, "path")) not restored; the archive is damaged (see above)",
                               valueRole: .danger))
        }
        items.append(.init("Time", Units.elapsed(result.elapsed)))
        let list = KeyValueList(items: items)
        if context.capabilities.stdoutIsTTY {
            let badge = result.hasIntegrityFailure ? Badge("DAMAGED", role: .danger) : Badge(request.dryRun ? "DRY RUN" : "RESTORED", role: .success)
            context.print(Stack([badge, Box(title: request.dryRun ? "Restore (dry run)" : "Restore", content: [list])]))
        } else {
            context.print(list)
        }
    }

    private func json(_ result: RestoreResult, source: String, code: ExitCode) -> JSONValue {
        var object = JSONObject([
            ("source", .string(source)),
            ("backup_id", result.backupID.map { .string($0.rawValue) } ?? .null),
            ("target", .string(request.target)),
            ("dry_run", .bool(request.dryRun)),
            ("files", .int(result.files)),
            ("directories", .int(result.directories)),
            ("symlinks", .int(result.symlinks)),
            ("hardlinks", .int(result.hardlinks)),
            ("other", .int(result.other)),
            ("bytes", .int(result.bytes)),
            ("skipped_existing", .int(result.skippedExisting)),
            ("verified", .bool(result.verifiedAgainstManifest && result.unverifiedFiles == 0)),
            ("plain_tarball", .bool(result.plainTarball)),
            ("unverified_files", .int(result.unverifiedFiles)),
        ])
        object["damaged"] = .array(result.damaged.map(WarningJSON.encode))
        object["warnings"] = .array(result.warnings.map(WarningJSON.encode))
        object["archive_problem"] = result.archiveProblem.map { .string($0) } ?? .null
        if request.dryRun { object["planned"] = .array(result.planned.map { .string($0) }) }
        object["archive_bytes_read"] = .int(result.archiveBytesRead)
        object["archives_read_in_part"] = .int(Int64(result.archivesReadInPart))
        object["elapsed_seconds"] = .double((result.elapsed * 1000).rounded() / 1000)
        object["exit_code"] = .int(Int64(code.rawValue))
        return .object(object)
    }
}
