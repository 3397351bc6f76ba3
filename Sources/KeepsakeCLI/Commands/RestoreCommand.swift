import BackupCore
import Foundation
import KeepsakeConfig
import KeepsakeJSON
import KeepsakeModel
import KeepsakeScan
import KeepsakeSupport
import TerminalUI

/// `keepsake restore`: all or part of a backup, from the destination or a lone archive file.
struct RestoreCommand: KeepsakeCommand {
    // MARK: Spec

    static let spec = CommandSpec(
        name: "restore",
        abstract: "Restore all or part of a backup, or of an archive file.",
        discussion: "Every file gets its name only once its SHA-256 matches the manifest: damaged or half-written content never lands under it (exit 4 for damage). Nothing is written outside the target: absolute paths, '..' and paths through symlinks are refused. Existing files are kept unless --overwrite says otherwise; kept files that differ from the backup are named (exit 3). A target that refuses writes is an error (exit 1), or exit 3 when only some paths could not be written. A lone incremental archive needs its parent's archive beside it (exit 3 without it). Plain tar archives (tar, tar.gz, tar.zst, tar.xz) restore too, without a manifest to check against.",
        arguments: [
            ArgumentSpec(.backup, help: "A backup id, unique id prefix, 'latest', or an archive file. On a terminal, leave it out to pick a backup from a list.",
                         optional: true),
            ArgumentSpec(.path, help: "Restore only these paths (a folder brings its contents; patterns like '*.conf' allowed).",
                         optional: true, repeating: true, takesPath: true),
        ],
        options: DestinationSelection.options + [
            OptionSpec(.target, short: "C", kind: .value(valueName: "dir"), defaultDescription: "the current folder, for chosen PATHs",
                       help: "The folder to restore into; created when missing. Paths inside keep their full original path. Required to restore a whole backup ('--target .' for the current folder); on a terminal a question stands in.",
                       takesPath: true),
            OptionSpec(.overwrite, kind: .value(valueName: "when"),
                       allowedValues: OverwritePolicy.allCases.map(\.rawValue), defaultDescription: "never",
                       help: "Replace existing files: never, if-newer (the backup's copy is newer), or always."),
            OptionSpec(.stripComponents, kind: .value(valueName: "n"), defaultDescription: "0",
                       help: "Drop the first N folders of every path (as tar does): 'home/ana/src/a.txt' with 3 lands as 'a.txt' in the target."),
            OptionSpec(.dryRun, short: "n", help: "Read and check the archive, list what would be written and count what would be kept, write nothing."),
            OptionSpec(.sameOwner, help: "As root: also restore setuid/setgid bits, device files and extended attributes outside user.* (security.capability and the like; owners are restored as root anyway)."),
            OptionSpec(.samePermissions, short: "p", help: "Give entries exactly their recorded permissions; without it, users other than root get them less the umask (as with tar)."),
            OptionSpec(.sync, help: "Wait until the target's disk holds everything restored before finishing (syncfs). Without it, as with tar, the system writes it out in its own time."),
            CommonOptions.source,
            CommonOptions.host,
            CommonOptions.allHosts,
            CommonOptions.progress,
        ] + KeyOptions.reading + [SigningOptions.signedBy] + CommonOptions.global,
        examples: [
            .init(command: "keepsake restore latest --target /tmp/restore", explanation: "Restore the newest backup into /tmp/restore."),
            .init(command: "keepsake restore 20261129 home/ana/notes.txt", explanation: "Restore one file of a backup into the current folder."),
            .init(command: "keepsake restore latest --target /", explanation: "Put everything back where it was (existing files are kept; add --overwrite always to replace them)."),
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
    /// `--source`: `latest` is the newest backup holding this path.
    private let source: String?
    /// A whole backup into the current folder without `--target`: asked on the terminal first.
    private let asksForTarget: Bool

    init(arguments: ParsedArguments, context: CommandContext) throws {
        let selection = try DestinationSelection.resolve(arguments, context: context)
        destinationOption = selection.destination
        reference = arguments.argument(.backup)
        if arguments.value(.host) != nil && arguments.flag(.allHosts) {
            throw UsageError.custom("Give either '--host' or '--all-hosts', not both.", command: Self.spec)
        }
        hosts = HostSelection.from(host: selection.host(arguments), allHosts: arguments.flag(.allHosts))
        source = arguments.value(.source).map(DestinationResolver.absolute)
        if reference == nil && (!context.capabilities.canPrompt || context.noInput) {
            // Without a terminal to pick on, the backup must be named.
            throw UsageError(.missingArgument("BACKUP"), command: Self.spec)
        }
        var request = RestoreRequest(target: "", overwrite: arguments.value(.overwrite).flatMap(OverwritePolicy.init(rawValue:)) ?? .never,
                                     dryRun: arguments.flag(.dryRun), restoreSpecialFiles: arguments.flag(.sameOwner),
                                     samePermissions: geteuid() == 0 || arguments.flag(.samePermissions))
        // Paths go as bytes: a name need not be UTF-8.
        request.targetPath = DestinationResolver.absolute(arguments.path(.target) ?? Array(".".utf8))
        request.selectionPaths = arguments.argumentPaths(.path)
        if let text = arguments.value(.stripComponents) {
            guard let count = Int(text), count >= 0, count <= 4096 else {
                throw UsageError.custom("The value '\(text)' is invalid for '--strip-components <n>'. Use a whole number of 0 or more.",
                                        command: Self.spec)
            }
            request.stripComponents = count
        }
        request.sync = arguments.flag(.sync)
        request.signedBy = try SigningOptions.signedBy(arguments, profile: selection.profile?.signing ?? Profile.SigningSettings())
        // A whole backup lands where the user said: a command pasted without its paths
        // must not spill a backup into whatever folder the shell is in.
        asksForTarget = request.selectionPaths.isEmpty && arguments.path(.target) == nil && !request.dryRun
        if asksForTarget && (!context.capabilities.canPrompt || context.noInput) {
            throw UsageError.custom("Restoring a whole backup needs '--target <dir>': say where it goes ('--target .' for the "
                + "current folder), or name the paths to restore.", command: Self.spec)
        }
        self.request = request
        if arguments.flag(.sameOwner) && geteuid() != 0 {
            throw UsageError.custom("The option '--same-owner' needs root: only root can give files to other owners or restore setuid bits and device files.", command: Self.spec)
        }
        progress = arguments.flag(.progress)
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
        let backup = try reference.map { try context.locate($0, destinationOption: destinationOption, hosts: hosts, source: self.source) }
            ?? context.locator(destinationOption).locate(.backup(pickBackup(context: context)))
        let source = backup.label
        if asksForTarget { try confirmTarget(restoring: source, context: context) }
        let presenter = EventPresenter(context: context, progress: progress)
        defer { presenter.finish() }
        let result: RestoreResult
        do {
            result = try Restorer(events: presenter, cancellation: context.cancellation).restore(backup, request: request)
        } catch var unmatched as UnmatchedSelection {
            // A path deleted before this backup: say which backups still hold it.
            presenter.finish()
            unmatched.elsewhere = try holders(of: unmatched.paths.map(PathBytes.display), besides: backup)
            throw unmatched
        }
        presenter.finish()
        if result.entryCount == 0 && result.skippedExisting == 0 && result.existingDirectories == 0 && result.missingArchives.isEmpty
            && !request.selections.isEmpty && !result.hasIntegrityFailure {
            let wanted = request.selections.map { "'\($0)'" }.joined(separator: ", ")
            if let elsewhere = try holders(of: request.selections, besides: backup) {
                throw EngineError.invalidRequest("Nothing in \(source) matches \(wanted); \(elsewhere)")
            }
            throw EngineError.invalidRequest("Nothing in \(source) matches \(wanted); run 'keepsake list \(source)' to see its paths.")
        }
        let outcome = Outcome(result: result, isArchiveFile: backup.isArchiveFile, dryRun: request.dryRun)
        if outcome.code == .failure, let first = result.warnings.first(where: { $0.kind == .unwritable }) {
            // Every path refused: the target's problem, said once.
            let refused = result.unwrittenPaths
            throw EngineError.targetUnusable(path: request.target, reason: "nothing could be written into it "
                + "(\(Units.count(refused, "path")) refused; the first, \(first.path): \(first.reason)); "
                + "fix the permissions of the folders on the way, or restore into another folder with '--target DIR'")
        }
        if context.json {
            context.printJSON(json(result, source: source, code: outcome.code))
        } else {
            show(result, outcome: outcome, source: source, context: context)
        }
        return outcome.code
    }

    /// "3 files, 1 folder, 2 links and others, 4.1 KiB": the files and bytes always, the
    /// rest when there are any.
    static func counts(_ result: RestoreResult) -> String {
        var parts = [Units.count(Int(result.files), "file")]
        if result.directories > 0 { parts.append(Units.count(Int(result.directories), "folder")) }
        let others = result.symlinks + result.hardlinks + result.other
        if others > 0 { parts.append(Units.count(Int(others), "link or other", plural: "links and others")) }
        return (parts + [Units.bytes(result.bytes)]).joined(separator: ", ")
    }

    // MARK: Judging

    /// What a restore's result means for its exit code and its badge.
    private struct Outcome {
        /// An earlier archive of the chain is missing from a destination (which should hold
        /// it): damage there, unlike beside a lone archive file, where it is a file to bring.
        let missingIsDamage: Bool
        let code: ExitCode

        init(result: RestoreResult, isArchiveFile: Bool, dryRun: Bool) {
            missingIsDamage = !isArchiveFile && !result.missingArchives.isEmpty
            // Exit 4 is for damaged data only; a target that refused some paths, differing
            // files kept, or a parent archive to bring make the restore partial (3). A dry
            // run writes nothing, so what it would keep does not make it partial.
            let keptDifferent = !dryRun && !result.keptDifferent.isEmpty
            if result.hasIntegrityFailure || missingIsDamage {
                code = .integrity
            } else if result.hasUnwrittenPaths && !dryRun && result.writtenCount == 0 && result.directories == 0
                        && result.skippedExisting == 0 {
                // The target refused every path: it is the target that failed (exit 1).
                code = .failure
            } else if result.hasUnwrittenPaths || keptDifferent || !result.missingArchives.isEmpty {
                code = .partial
            } else {
                code = .success
            }
        }
    }

    // MARK: Other backups

    /// Which other backups (of the hosts `latest` is chosen among) hold paths matching
    /// `selections`, newest first, as a sentence that ends with the command restoring them
    /// from the newest; nil when none does, or for a lone archive file.
    private func holders(of selections: [String], besides backup: LocatedBackup) throws -> String? {
        guard !backup.isArchiveFile else { return nil }
        let searches = selections.compactMap { try? BackupSearch(pattern: $0) }
        guard searches.count == selections.count else { return nil }
        var holders: [BackupSummary] = []
        let catalog = BackupCatalog(storage: backup.storage)
        for item in try catalog.items().reversed() where item.id != backup.id {
            guard let summary = item.summary, hosts.includes(summary.host), !summary.sourcesHidden,
                  let manifest = try? catalog.manifest(of: item),
                  searches.contains(where: { !$0.matches(in: manifest).isEmpty }) else { continue }
            holders.append(summary)
            if holders.count == 4 { break }
        }
        guard let newest = holders.first else { return nil }
        let named = holders.prefix(3).map { "\($0.id.rawValue) (\(Timestamp.localShort($0.created)))" }
        let more = holders.count > 3 ? " and more" : ""
        let paths = selections.map(PasteableCommands.shellWord).joined(separator: " ")
        // A quoted path would end a '…' command early.
        let quote = paths.contains("'") ? "`" : "'"
        return "backups that hold it: \(named.joined(separator: ", "))\(more); run \(quote)keepsake restore \(newest.id.rawValue) "
            + "\(paths)\(quote) for the newest."
    }

    // MARK: Asking

    /// Asks before a whole backup is restored into the current folder (no `--target`);
    /// anything but yes restores nothing.
    private func confirmTarget(restoring source: String, context: CommandContext) throws {
        let question = Field.text("Restore all of \(source) into the current folder \(request.target)? (yes/no)", default: "no")
        let answer: String
        do {
            answer = try question.ask(using: context.console.prompts(), context: context.err, noInput: context.noInput)
        } catch {
            throw EngineError.invalidRequest("Nothing was restored: no answer to whether to restore into the current folder; "
                + "give '--target <dir>'.")
        }
        guard ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased()) else {
            throw EngineError.invalidRequest("Nothing was restored; give '--target <dir>' to say where the backup goes.")
        }
    }

    // MARK: Picking

    /// Lets the user choose a backup on the terminal, newest first.
    private func pickBackup(context: CommandContext) throws -> String {
        let storage = try context.destination(destinationOption)
        let items = try BackupCatalog(storage: context.reading(storage)).items().reversed().filter { item in
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
            let index = try Picker(title: "Backup", items: labels).choose(using: context.console.prompts(), context: context.err,
                                                                          noInput: context.noInput)
            return items[index].id.rawValue
        } catch PromptError.cancelled {
            throw EngineError.invalidRequest("Nothing was restored: the choice was cancelled.")
        }
    }

    // MARK: Output

    private func show(_ result: RestoreResult, outcome: Outcome, source: String, context: CommandContext) {
        for problem in result.damaged {
            context.damaged("\(problem.path): \(problem.reason)")
        }
        for warning in result.warnings {
            context.warn("\(warning.path): \(warning.reason)")
        }
        for path in result.keptDifferent {
            context.warn("\(path): \(request.dryRun ? "would be kept" : "kept"); it differs from the backup's copy")
        }
        for missing in result.missingArchives {
            let count = Units.count(missing.paths.count, "file")
            if outcome.missingIsDamage {
                context.damaged("the archive of backup \(missing.backupID.rawValue), which holds \(count) of this backup unchanged, "
                    + "is missing from the destination; they were not restored (run 'keepsake verify')")
            } else {
                context.warn("\(source) needs \(missing.stem)'s archive (\(missing.fileName)) next to this file: "
                    + "\(count) of this backup \(missing.paths.count == 1 ? "lives" : "live") in it and "
                    + "\(missing.paths.count == 1 ? "was" : "were") not restored; put that archive beside this one and restore again")
            }
        }
        if let problem = result.archiveProblem {
            context.damaged("\(problem)")
        }
        if request.dryRun && !context.quiet {
            for path in result.planned { context.printLine(path) }
        }
        guard !context.quiet else { return }
        let dry = request.dryRun
        var items: [KeyValueList.Item] = [
            .init("From", source),
            .init(dry ? "Would restore into" : "Into", request.target),
            .init(dry ? "Would write" : "Restored", RestoreCommand.counts(result)),
        ]
        let others = result.directories + result.symlinks + result.hardlinks + result.other
        if !dry, result.files == 1, others == 0, result.damaged.isEmpty, result.warnings.isEmpty,
           let placement = result.firstFilePlacement {
            // One file: say exactly where it is.
            items.append(.init("Restored to", PathBytes.display(PathBytes.join(request.targetPath, placement))))
        }
        if result.replaced > 0 {
            // How many held something else, and how many the backup's copy already.
            var parts = ["\(Units.count(Int(result.replacedDifferent))) differed"]
            let same = result.replacedSame
            if same > 0 { parts.append("\(Units.count(Int(same))) \(same == 1 ? "was" : "were") already the same") }
            if result.replacedUncompared > 0 {
                parts.append("\(Units.count(Int(result.replacedUncompared))) could not be compared (no SHA-256 to go by)")
            }
            items.append(.init(dry ? "Would replace" : "Replaced", "\(Units.count(Int(result.replaced), "existing file")) "
                + "with the backup's copy (\(parts.joined(separator: ", ")))"))
        }
        if result.skippedExisting > 0 {
            items.append(.init(dry ? "Would keep" : "Kept", keptText(result), valueRole: result.keptDifferent.isEmpty ? .plain : .warning))
        }
        if !result.missingArchives.isEmpty {
            let names = result.missingArchives.map(\.fileName).joined(separator: ", ")
            items.append(.init("Missing", "\(Units.count(result.missingArchivePaths, "file")) not restored: "
                + (outcome.missingIsDamage ? "their archive is missing from the destination (\(names))"
                    : "they are in \(names), which is not next to this file"),
                               valueRole: outcome.missingIsDamage ? .danger : .warning))
        }
        if result.hasUnwrittenPaths {
            items.append(.init("Not written", "\(Units.count(result.unwrittenPaths, "path")) the target refused (see the warnings above)",
                               valueRole: .warning))
        }
        if result.plainTarball {
            items.append(.init("Checked", "no manifest in this archive: contents could not be verified", valueRole: .warning))
        } else if result.unverifiedFiles > 0 && result.archiveProblem != nil {
            items.append(.init("Checked", "the archive is damaged before its manifest: \(Units.count(Int(result.unverifiedFiles), "file")) could not be checked "
                + "and were restored as NAME\(Restorer.unverifiedSuffix); look at them before you trust them", valueRole: .warning))
        } else if result.unverifiedFiles > 0 {
            items.append(.init("Checked", "\(Units.count(Int(result.unverifiedFiles), "file")) restored without verification", valueRole: .warning))
        } else if result.verifiedAgainstManifest && (result.hasIntegrityFailure || !result.missingArchives.isEmpty) {
            // Not "every file": some were not restored (issue 25 §2.3).
            items.append(.init("Checked", "the \(Units.count(Int(result.files), "file")) restored matched their SHA-256",
                               valueRole: .plain))
        } else if result.verifiedAgainstManifest {
            items.append(.init("Checked", "every file matched its SHA-256", valueRole: .success))
        }
        if result.hasIntegrityFailure {
            items.append(.init("Damaged", result.damaged.isEmpty ? "nothing lost, but the backup is damaged (see above)"
                : "\(Units.count(result.damaged.count, "path")) not restored; the archive is damaged (see above)",
                               valueRole: .danger))
        }
        items.append(.init("Time", Units.elapsed(result.elapsed)))
        let list = KeyValueList(items: items)
        if context.capabilities.stdoutIsTTY {
            context.print(Stack([badge(result, outcome: outcome), context.summaryCard(title: dry ? "Restore (dry run)" : "Restore", content: [list])]))
        } else {
            context.print(list)
        }
    }

    /// The kept line: how many existing entries were left alone, how many of them differ
    /// from the backup, and the option that would replace them (only when one would).
    private func keptText(_ result: RestoreResult) -> String {
        let kept = Units.count(Int(result.skippedExisting), "existing file")
        let different = result.keptDifferent.count
        guard different > 0 else {
            return "\(kept), already the same as the backup's"
        }
        let same = Int(result.skippedExisting) - different
        let split = same > 0 ? "\(different) \(different == 1 ? "differs" : "differ") from the backup's, \(same) the same" : "\(different == 1 ? "it differs" : "all differ") from the backup's"
        switch request.overwrite {
        case .never:
            return "\(kept) (\(split)); use '--overwrite if-newer' or '--overwrite always' to replace them"
        case .ifNewer:
            return "\(kept) newer than the backup's (\(split)); use '--overwrite always' to replace them"
        case .always:
            return "\(kept) (\(split))"
        }
    }

    /// The badge atop the summary on a terminal.
    private func badge(_ result: RestoreResult, outcome: Outcome) -> Badge {
        if outcome.code == .integrity { return Badge("DAMAGED", role: .danger) }
        if request.dryRun { return Badge("DRY RUN", role: .success) }
        if outcome.code == .partial { return Badge("INCOMPLETE", role: .warning) }
        if result.writtenCount == 0 && result.skippedExisting > 0 { return Badge("UP TO DATE", role: .success) }
        return Badge("RESTORED", role: .success)
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
            ("written", .int(result.writtenCount)),
            ("replaced", .int(result.replaced)),
            ("replaced_different", .int(result.replacedDifferent)),
            ("replaced_uncompared", .int(result.replacedUncompared)),
            ("kept", .int(result.skippedExisting)),
            ("kept_same", .int(result.skippedExisting - Int64(result.keptDifferent.count))),
            ("existing_directories", .int(result.existingDirectories)),
            ("verified", .bool(result.verifiedAgainstManifest && result.unverifiedFiles == 0)),
            ("plain_tarball", .bool(result.plainTarball)),
            ("unverified_files", .int(result.unverifiedFiles)),
        ])
        object["damaged"] = .array(result.damaged.map(WarningJSON.encode))
        object["warnings"] = .array(result.warnings.map(WarningJSON.encode))
        object["kept_different"] = .array(result.keptDifferent.map { .string($0) })
        object["missing_archives"] = .array(result.missingArchives.map { missing in
            .object(JSONObject([
                ("backup_id", .string(missing.backupID.rawValue)),
                ("file", .string(missing.fileName)),
                ("paths", .array(missing.paths.map { .string($0) })),
            ]))
        })
        object["archive_problem"] = result.archiveProblem.map { .string($0) } ?? .null
        if request.dryRun { object["planned"] = .array(result.planned.map { .string($0) }) }
        object["archive_bytes_read"] = .int(result.archiveBytesRead)
        object["archives_read_in_part"] = .int(Int64(result.archivesReadInPart))
        object["synced"] = .bool(result.synced)
        object["elapsed_seconds"] = .double((result.elapsed * 1000).rounded() / 1000)
        object["exit_code"] = .int(Int64(code.rawValue))
        return .object(object)
    }
}

// MARK: - Option keys

extension OptionKey {
    static let overwrite = OptionKey("overwrite")
    static let sameOwner = OptionKey("same-owner")
    static let samePermissions = OptionKey("same-permissions")
    static let stripComponents = OptionKey("strip-components")
    static let sync = OptionKey("sync")
    static let target = OptionKey("target")
}
