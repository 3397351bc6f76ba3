import BackupCore
import Foundation
import KeepsakeJSON
import KeepsakeModel
import KeepsakeStorage
import KeepsakeSupport
import TerminalUI

/// `keepsake list`: the backups as a table, or the files of one backup.
struct ListCommand: KeepsakeCommand {
    // MARK: Spec

    static let spec = CommandSpec(
        name: "list",
        abstract: "List the backups, or the files of one backup.",
        discussion: "Without an argument: a table of the backups in the destination, oldest first. With a backup id (any unique prefix, or 'latest') or an archive file: its files, one path per line; --long adds mode, owner, size, time and SHA-256.",
        arguments: [ArgumentSpec(.backup, help: "A backup id, unique id prefix, 'latest', or an archive file.", optional: true)],
        options: DestinationSelection.options + [
            OptionSpec(.long, short: "l", help: "With BACKUP: show mode, owner, size, modification time and SHA-256. Without: show the HOST column even when one host made every backup."),
            OptionSpec(.wide, help: "With BACKUP --long: the whole SHA-256 of each file (otherwise its first 12 hex digits)."),
            OptionSpec(.ids, help: "Without BACKUP: print only the backup ids, oldest first, one per line."),
            CommonOptions.source,
            OptionSpec(.host, kind: .value(valueName: "name"), defaultDescription: "every host",
                       help: "Without BACKUP: only the backups this host made; with BACKUP, whose backup 'latest' is."),
        ] + KeyOptions.reading + CommonOptions.global,
        examples: [
            .init(command: "keepsake list", explanation: "Show the backups in the default destination."),
            .init(command: "keepsake list latest --long", explanation: "Show the files of the newest backup with details."),
            .init(command: "keepsake list /mnt/usb/host_20261129T023000Z-3f9a1c2e.tar.zst", explanation: "Show what a lone archive file holds."),
        ]
    )

    private let reference: String?
    private let destinationOption: String?
    private let long: Bool
    /// `--wide`: whole SHA-256s in the long listing.
    private let wide: Bool
    private let idsOnly: Bool
    /// `--host`: whose backups to show.
    private let host: String?
    /// `--source`: only backups of this source.
    private let source: String?

    init(arguments: ParsedArguments, context: CommandContext) throws {
        reference = arguments.argument(.backup)
        destinationOption = try DestinationSelection.resolve(arguments, context: context).destination
        long = arguments.flag(.long)
        wide = arguments.flag(.wide)
        idsOnly = arguments.flag(.ids)
        host = arguments.value(.host)
        source = arguments.value(.source).map(DestinationResolver.absolute)
        if idsOnly && reference != nil {
            throw UsageError.custom("The option '--ids' lists backups; it does not take a BACKUP.", command: Self.spec)
        }
    }

    // MARK: Running

    func run(context: CommandContext) throws -> ExitCode {
        guard let argument = reference else { return try listBackups(try context.destination(destinationOption), context: context) }
        let backup = try context.locate(argument, destinationOption: destinationOption, hosts: host.map { .only($0) } ?? .all,
                                        source: source)
        if !long, !backup.isArchiveFile, let summary = backup.item?.summary {
            // Printed as the manifest is read: a listing of any size in little memory.
            try streamEntries(of: backup, summary: summary, context: context)
            return .success
        }
        let contents = try backup.contents(cancellation: context.cancellation)
        if contents.manifest == nil && !context.json {
            context.note("\(backup.label) has no Keepsake manifest: a plain tar archive, listed from its headers.")
        }
        showEntries(contents.entries, summary: contents.manifest?.summary, context: context)
        return .success
    }

    private func listBackups(_ storage: any ReadableStorage, context: CommandContext) throws -> ExitCode {
        let catalog = BackupCatalog(storage: context.reading(storage))
        let listed = try catalog.items().filter { item in
            host.map { item.summary?.host == $0 } ?? true
        }
        // With the key, encrypted backups show their sources too (one manifest opened per set).
        let keyring = context.keyring
        let items = catalog.revealed(listed) { item in
            item.summary?.encryption != nil && keyring.opensWithoutAsking(item.summary?.encryption)
        }.filter { item in source.map { BackupCatalog.item(item, holds: $0) } ?? true }
        // A destination several hosts back up to shows whose each backup is.
        let hosts = Set(items.compactMap { $0.summary?.host })
        if idsOnly && !context.json {
            for item in items { context.printLine(item.id.rawValue) }
            return .success
        }
        if context.json {
            context.printJSON(.object(JSONObject([
                ("destination", .string(storage.location)),
                ("backups", .array(items.map { item in
                    item.summary?.json ?? .object(JSONObject([("id", .string(item.id.rawValue)),
                                                              ("error", .string(item.problem ?? "unreadable"))]))
                })),
                ("exit_code", .int(0)),
            ])))
            return .success
        }
        guard !items.isEmpty else {
            if !context.quiet {
                context.message(Stack([
                    Text(host.map { "No backups of host '\($0)' in \(storage.location)." } ?? "No backups in \(storage.location) yet."),
                    HintLine("Make one with", command: context.pasteable.complete(command: "keepsake backup PATH")),
                ]))
            }
            return .success
        }
        var columns: [Table.Column] = [
            .init("ID", minWidth: 25, priority: 10),
            .init("KIND", minWidth: 6, priority: 5, optional: true),
            .init("CREATED", minWidth: 16, priority: 4, optional: true),
            .number("FILES", minWidth: 14, priority: 6),
            .number("SIZE", minWidth: 10, priority: 7),
            .number("STORED", minWidth: 10, priority: 7),
            .number("RATIO", minWidth: 7, priority: 3, optional: true),
            // Left out before the numbers are cut, kept longer than the ratio, time and kind.
            Table.Column("SOURCES", truncation: .middle, minWidth: 12, flexible: true, priority: 6, optional: true),
            .init("TAGS", minWidth: 4, flexible: true, priority: 1, optional: true),
        ]
        let showsHost = hosts.count > 1 || long
        if showsHost { columns.insert(.init("HOST", minWidth: 4, priority: 8), at: 1) }
        let rows: [[Table.Cell]] = items.map { item in
            guard let summary = item.summary else {
                let row: [Table.Cell] = [Table.Cell(item.id.rawValue), .badge(Badge("??", role: .danger, emphasis: .small)), "", "", "",
                                         "", "", Table.Cell(item.isMisnamed ? "misnamed (run verify)" : "unreadable manifest", role: .danger), ""]
                return showsHost ? [row[0], ""] + row.dropFirst() : row
            }
            let stored = summary.archive?.size ?? 0
            let ratio = CompressionRatio.text(summary)
            let kind = summary.isIncremental ? Badge("INCR", role: .muted, emphasis: .small) : Badge("FULL", role: .accent, emphasis: .small)
            let row: [Table.Cell] = [Table.Cell(summary.id.rawValue, role: .accent), .badge(kind),
                                     Table.Cell(Timestamp.localShort(summary.created)),
                                     Table.Cell(Units.count(Int(summary.fileCount))), Table.Cell(Units.bytes(summary.originalBytes)),
                                     Table.Cell(Units.bytes(stored)), Table.Cell(ratio),
                                     sourcesCell(summary), Table.Cell(summary.tags.joined(separator: ","))]
            return showsHost ? [row[0], Table.Cell(summary.host)] + row.dropFirst() : row
        }
        context.print(Table(columns: columns, cells: rows))
        return .success
    }

    /// The sources, or for an encrypted backup (its summary in the clear holds no paths)
    /// how it is encrypted; a readable encrypted backup shows both.
    private func sourcesCell(_ summary: BackupSummary) -> Table.Cell {
        // Several sources start with their count, which a cut in the middle never hides.
        let count = summary.sources.count > 1 ? "(\(summary.sources.count)) " : ""
        let sources = count + summary.sources.joined(separator: ", ")
        guard let encryption = summary.encryption else { return Table.Cell(sources) }
        if summary.sourcesHidden { return Table.Cell("encrypted (\(encryption.label))", role: .muted) }
        return Table.Cell(sources + " (encrypted)")
    }

    /// Paths (or JSON) written as the manifest beside the archive is read, a block at a time.
    private func streamEntries(of backup: LocatedBackup, summary: BackupSummary, context: CommandContext) throws {
        var text = ""
        func write(_ piece: String) {
            text += piece
            if text.utf8.count > 1 << 16 {
                context.printText(text)
                text = ""
            }
        }
        if context.json {
            var document = StreamedJSONObject(leading: JSONObject([("backup", summary.json)]), arrayKey: "entries",
                                              trailing: JSONObject([("exit_code", .int(0))]),
                                              pretty: context.capabilities.stdoutIsTTY, write: write)
            _ = try backup.forEachEntry(cancellation: context.cancellation) { document.append(EntryFormatting.json($0)) }
            document.finish()
            write("\n")
        } else {
            _ = try backup.forEachEntry(cancellation: context.cancellation) { write($0.displayPath + "\n") }
        }
        context.printText(text)
    }

    private func showEntries(_ entries: ManifestEntries, summary: BackupSummary?, context: CommandContext) {
        if context.json {
            context.printJSON(.object(JSONObject([
                ("backup", summary?.json ?? .null),
                ("entries", .array(entries.map(EntryFormatting.json))),
                ("exit_code", .int(0)),
            ])))
            return
        }
        // Columns line up: owners padded, sizes right-aligned, to the widest of the listing.
        let size: (ManifestEntry) -> String = { $0.type == .file || $0.type == .hardlink ? String($0.size) : "-" }
        let ownerWidth = long ? entries.map { DisplayWidth.width(of: EntryFormatting.owner($0)) }.max() ?? 0 : 0
        let sizeWidth = long ? entries.map { size($0).count }.max() ?? 0 : 0
        let hashWidth = wide ? 64 : 12
        var text = ""
        for entry in entries {
            if long {
                let owner = EntryFormatting.owner(entry)
                let sizeText = size(entry)
                let hash = entry.sha256.map { String($0.prefix(hashWidth)) } ?? "-"
                text += "\(EntryFormatting.modeString(entry))  \(DisplayWidth.pad(owner, toWidth: ownerWidth))  "
                    + String(repeating: " ", count: sizeWidth - sizeText.count) + sizeText + "  "
                    + "\(EntryFormatting.modified(entry))  \(hash.padding(toLength: hashWidth, withPad: " ", startingAt: 0))  "
                    + EntryFormatting.pathWithLink(entry) + "\n"
            } else {
                text += entry.displayPath + "\n"
            }
            if text.utf8.count > 1 << 16 {
                context.printText(text)
                text = ""
            }
        }
        context.printText(text)
    }
}

// MARK: - Option keys

extension OptionKey {
    static let ids = OptionKey("ids")
    static let long = OptionKey("long")
    static let wide = OptionKey("wide")
}
