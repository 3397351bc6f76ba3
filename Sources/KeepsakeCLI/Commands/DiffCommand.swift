import BackupCore
import Foundation
import KeepsakeArchive
import KeepsakeJSON
import KeepsakeModel
import KeepsakeSupport
import TerminalUI

/// `keepsake diff FROM TO`: what changed between two backups.
struct DiffCommand: KeepsakeCommand {
    // MARK: Spec

    static let spec = CommandSpec(
        name: "diff",
        abstract: "Show what changed between two backups.",
        discussion: "Compares the manifests of two backups path by path (no archive is read): paths added, removed, modified (content or type changed: size or SHA-256 differ) and changed in metadata only (mode, owner, modification time, symlink target or hard link), sorted by path. Content is compared by SHA-256, wherever it is stored. A difference is not a failure: the exit code is 0.",
        arguments: [
            ArgumentSpec(.from, help: "The older backup: an id, unique id prefix, 'latest', or an archive file."),
            ArgumentSpec(.to, help: "The newer backup: an id, unique id prefix, 'latest', or an archive file."),
        ],
        options: DestinationSelection.options + [CommonOptions.source, CommonOptions.hostFilter]
            + KeyOptions.reading + CommonOptions.global,
        examples: [
            .init(command: "keepsake diff 20261128 latest", explanation: "What changed between a backup of 28 November and the newest one."),
            .init(command: "keepsake diff 20261128 20261129 --json", explanation: "The same as one JSON document, for scripts."),
        ]
    )

    private let fromReference: String
    private let toReference: String
    private let destinationOption: String?
    /// `--host` and `--source`: which backups `latest` means.
    private let hosts: HostSelection
    private let source: String?

    init(arguments: ParsedArguments, context: CommandContext) throws {
        destinationOption = try DestinationSelection.resolve(arguments, context: context).destination
        // The parser has already insisted on exactly two positionals.
        guard let from = arguments.argument(.from), let to = arguments.argument(.to) else {
            throw UsageError(.missingArgument("\(ArgumentKey.from) \(ArgumentKey.to)"), command: Self.spec)
        }
        fromReference = from
        toReference = to
        hosts = arguments.value(.host).map { .only($0) } ?? .all
        source = arguments.value(.source).map(DestinationResolver.absolute)
    }

    // MARK: Running

    func run(context: CommandContext) throws -> ExitCode {
        let from = try Side(try context.locate(fromReference, destinationOption: destinationOption, hosts: hosts, source: source),
                            context: context)
        // The newer side is read front to back against the older one, never held whole.
        let newer = try context.locate(toReference, destinationOption: destinationOption, hosts: hosts, source: source)
        var builder = ManifestDiff.Builder(before: from.entries)
        let newerSummary = try newer.forEachEntry(cancellation: context.cancellation) { builder.add($0) }
        let to = Side(newer, summary: newerSummary, context: context)
        let diff = builder.finish()
        if context.json {
            var object = JSONObject([("from", .string(from.label)), ("to", .string(to.label))])
            for status in ManifestDiff.Status.allCases {
                object[status.rawValue] = .array(diff.rows(status).map(Self.json))
            }
            object["exit_code"] = .int(0)
            context.printJSON(.object(object))
            return .success
        }
        if !diff.isEmpty {
            context.print(table(diff))
        }
        if !context.quiet {
            let out = context.out
            for line in DisplayWidth.wrap(summaryLine(diff, from: from.label, to: to.label, in: out), width: out.width) {
                context.printLine(line)
            }
        }
        return .success
    }

    // MARK: Loading

    /// One side of the comparison: a backup in the destination, or an archive file.
    private struct Side {
        /// The backup id, or the archive file's path when it has no manifest.
        let label: String
        /// The entries, when held (the older side).
        let entries: ManifestEntries

        /// The older side, its entries held.
        init(_ backup: LocatedBackup, context: CommandContext) throws {
            let contents = try backup.contents(cancellation: context.cancellation)
            self.init(backup, summary: contents.manifest?.summary, context: context, entries: contents.entries)
        }

        /// A side whose entries were read without being held; `summary` nil for a plain archive.
        init(_ backup: LocatedBackup, summary: BackupSummary?, context: CommandContext, entries: ManifestEntries = []) {
            if summary == nil {
                context.note("\(backup.label) has no Keepsake manifest: a plain tar archive, compared from its headers "
                    + "(no SHA-256, so content counts as changed when its size or modification time did).")
            }
            label = summary?.id.rawValue ?? backup.label
            self.entries = entries
        }
    }

    // MARK: Text output

    private func table(_ diff: ManifestDiff) -> Table {
        let columns: [Table.Column] = [
            .init("STATUS", minWidth: 8, priority: 10),
            // The path is what the row is about: WHAT CHANGED goes before it is cut.
            .path("PATH", prefersWhole: true),
            .init("SIZE", alignment: .right, minWidth: 8, priority: 6),
            .init("WHAT CHANGED", minWidth: 12, flexible: true, priority: 1, optional: true),
        ]
        let rows: [[Table.Cell]] = diff.rows.map { row in
            [Table.Cell(row.status.rawValue, role: Self.role(row.status)), Table.Cell(row.displayPath),
             Table.Cell(Self.sizeText(row)), Table.Cell(Self.whatChanged(row))]
        }
        return Table(columns: columns, cells: rows)
    }

    private static func role(_ status: ManifestDiff.Status) -> Theme.Role {
        switch status {
        case .added: return .success
        case .removed: return .danger
        case .modified: return .warning
        case .metadata: return .accent
        }
    }

    /// `12 B`, or `1.2 KiB → 3.4 KiB`, `- → 12 B`; exact bytes when the rounded sizes look alike.
    private static func sizeText(_ row: ManifestDiff.Row) -> String {
        let before = row.sizeBefore
        let after = row.sizeAfter
        if row.before != nil && row.after != nil && before == after { return before.map(Units.bytes) ?? "-" }
        var old = before.map(Units.bytes) ?? "-"
        var new = after.map(Units.bytes) ?? "-"
        if old == new, let before, let after {
            old = Units.count(Int(clamping: before)) + " B"
            new = Units.count(Int(clamping: after)) + " B"
        }
        return "\(old) → \(new)"
    }

    /// The row's changes in words: `content, size, mode 0644 → 0600, mtime`.
    private static func whatChanged(_ row: ManifestDiff.Row) -> String {
        switch row.status {
        case .added:
            let text = row.after.map { "new " + typeName($0.type) } ?? ""
            return text + (row.sameContentAs.map { ", same content as removed " + PathBytes.display($0) } ?? "")
        case .removed:
            let text = row.before.map { typeName($0.type) + " removed" } ?? ""
            return text + (row.sameContentAs.map { ", same content as added " + PathBytes.display($0) } ?? "")
        case .modified, .metadata: break
        }
        guard let old = row.before, let new = row.after else { return "" }
        return row.changes.map { change in
            switch change {
            case .type: return "type \(typeName(old.type)) → \(typeName(new.type))"
            case .size, .content, .mtime: return change.rawValue
            case .device: return "device number"
            case .mode: return "mode \(Self.octal(old.mode)) → \(Self.octal(new.mode))"
            case .owner: return "owner \(EntryFormatting.owner(old)) → \(EntryFormatting.owner(new))"
            case .target:
                return "target \(old.linkTarget.map(PathBytes.display) ?? "") → \(new.linkTarget.map(PathBytes.display) ?? "")"
            case .hardlink:
                if new.type == .hardlink, let target = new.linkTarget { return "now a hard link to \(PathBytes.display(target))" }
                return "no longer a hard link" + (old.linkTarget.map { " to " + PathBytes.display($0) } ?? "")
            }
        }.joined(separator: ", ")
    }

    private static func typeName(_ type: EntryType) -> String {
        switch type {
        case .file, .hardlink: return "file"
        case .directory: return "folder"
        case .symlink: return "symlink"
        case .fifo: return "fifo"
        case .characterDevice: return "character device"
        case .blockDevice: return "block device"
        case .socket: return "socket"
        }
    }

    private static func octal(_ mode: UInt32) -> String {
        let digits = String(mode & 0o7777, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    private func summaryLine(_ diff: ManifestDiff, from: String, to: String, in context: RenderContext) -> String {
        guard !diff.isEmpty else { return context.apply(.muted, to: "No differences between \(from) and \(to).") }
        let counts = "\(diff.count(.added)) added, \(diff.count(.removed)) removed, \(diff.count(.modified)) modified, "
            + "\(diff.count(.metadata)) metadata only"
        return counts + context.apply(.muted, to: " (\(from) → \(to))")
    }

    // MARK: JSON output

    private static func json(_ row: ManifestDiff.Row) -> JSONValue {
        var object = JSONObject()
        if let text = PathBytes.validString(row.path) {
            object["path"] = .string(text)
        } else {
            object["path_b64"] = .string(Data(row.path).base64EncodedString())
        }
        object["type_before"] = row.before.map { .string($0.type.rawValue) } ?? .null
        object["type_after"] = row.after.map { .string($0.type.rawValue) } ?? .null
        object["size_before"] = row.sizeBefore.map { .int($0) } ?? .null
        object["size_after"] = row.sizeAfter.map { .int($0) } ?? .null
        object["changes"] = .array(row.changes.map { .string($0.rawValue) })
        if let other = row.sameContentAs {
            if let text = PathBytes.validString(other) {
                object["same_content_as"] = .string(text)
            } else {
                object["same_content_as_b64"] = .string(Data(other).base64EncodedString())
            }
        }
        return .object(object)
    }
}

// MARK: - Arguments

extension ArgumentKey {
    /// The older backup of the two compared.
    static let from = ArgumentKey("FROM")
    /// The newer backup of the two compared.
    static let to = ArgumentKey("TO")
}
