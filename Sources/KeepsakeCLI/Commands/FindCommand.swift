import BackupCore
import Foundation
import KeepsakeJSON
import KeepsakeModel
import KeepsakeSupport
import TerminalUI

/// `keepsake find PATTERN`: which backups hold matching paths, and which version each holds.
struct FindCommand: KeepsakeCommand {
    // MARK: Spec

    static let spec = CommandSpec(
        name: "find",
        abstract: "Find which backups hold a file, with each version's size, time and SHA-256.",
        discussion: "PATTERN follows the --exclude rules: without a slash it matches a name at any depth (notes.txt, '*.pdf'); with a slash it matches the whole path (home/*/notes.txt; the leading / is optional); ** spans folders; a trailing / matches folders only. Every backup is searched, oldest first, from its manifest (no archive is read). Exit 1 when nothing matches.",
        arguments: [ArgumentSpec(.pattern, help: "A name or path pattern; quote it so the shell leaves * alone.")],
        options: DestinationSelection.options + [CommonOptions.source, CommonOptions.hostFilter]
            + KeyOptions.reading + CommonOptions.global,
        examples: [
            .init(command: "keepsake find notes.txt", explanation: "Every version of every file named notes.txt, in every backup."),
            .init(command: "keepsake find '*.pdf' --dest /mnt/usb/backups", explanation: "The PDF files in the backups on a USB disk."),
            .init(command: "keepsake find '/home/ana/projects/**/*.swift'", explanation: "Swift files anywhere below one folder."),
        ]
    )

    private let search: BackupSearch
    private let destinationOption: String?

    init(arguments: ParsedArguments, context: CommandContext) throws {
        destinationOption = try DestinationSelection.resolve(arguments, context: context).destination
        let pattern = arguments.argument(.pattern) ?? ""
        do {
            search = try BackupSearch(pattern: pattern)
        } catch {
            throw UsageError.custom("Invalid pattern '\(pattern)': \(error.reason).", command: Self.spec)
        }
        host = arguments.value(.host)
        source = arguments.value(.source).map(DestinationResolver.absolute)
    }

    /// `--host` and `--source`: which backups are searched.
    private let host: String?
    private let source: String?

    // MARK: Running

    func run(context: CommandContext) throws -> ExitCode {
        let storage = try context.destination(destinationOption)
        let result = try search.search(BackupCatalog(storage: context.reading(storage)), cancellation: context.cancellation) { item in
            (host.map { item.summary?.host == $0 } ?? true) && (source.map { BackupCatalog.item(item, holds: $0) } ?? true)
        }
        for skipped in result.skipped {
            context.warn("skipped backup \(skipped.id.rawValue): \(skipped.reason)")
        }
        let code: ExitCode = result.matches.isEmpty ? .failure : .success
        if context.json {
            context.printJSON(.object(JSONObject([
                ("pattern", .string(search.pattern)),
                ("destination", .string(storage.location)),
                ("backups_searched", .int(Int64(result.searchedCount))),
                ("matches", .array(result.matches.map(Self.json))),
                ("skipped", .array(result.skipped.map { skipped in
                    .object(JSONObject([("id", .string(skipped.id.rawValue)), ("reason", .string(skipped.reason))]))
                })),
                ("exit_code", .int(Int64(code.rawValue))),
            ])))
        }
        guard let newest = result.matches.last else {
            reportNoMatch(result, location: storage.location, context: context)
            return code
        }
        guard !context.json else { return code }
        context.print(table(result.matches))
        if !context.quiet {
            let versions = result.matches.count
            let backups = result.backupIDs.count
            context.message(Stack([
                Text("\(versions) match\(versions == 1 ? "" : "es") in \(backups) of \(result.searchedCount) backup\(result.searchedCount == 1 ? "" : "s")."),
                HintLine("Restore one with:", command: context.pasteable.complete(
                    command: "keepsake restore \(newest.backup.id.rawValue) \(Self.restorePath(newest.entry))")),
            ]))
        }
        return code
    }

    private func reportNoMatch(_ result: BackupSearch.Result, location: String, context: CommandContext) {
        let message: String
        if result.searchedCount == 0 && result.skipped.isEmpty {
            message = "No backups in \(location) to search."
        } else {
            message = "No path matching '\(search.pattern)' in the \(result.searchedCount) backup\(result.searchedCount == 1 ? "" : "s") in \(location)."
        }
        // With --json the search's own document (exit_code 1) is the answer.
        context.report(ErrorReport(message, code: .failure), json: false)
        guard !context.json && !context.quiet && result.searchedCount > 0, let hint = Self.broaderPattern(search.pattern) else {
            return
        }
        context.message(HintLine(hint.reason, command: context.pasteable.complete(command: "keepsake find '\(hint.pattern)'"),
                                 textRole: .muted))
    }

    /// A broader pattern to suggest when nothing matched, and why; nil when there is none.
    private static func broaderPattern(_ pattern: String) -> (reason: String, pattern: String)? {
        guard !pattern.contains("'") else { return nil }
        if !pattern.contains("/") {
            guard !pattern.contains("*") else { return nil }
            return ("A pattern without a slash matches whole names; for names containing it, try", "*\(pattern)*")
        }
        guard !pattern.hasPrefix("/") && !pattern.hasPrefix("**") else { return nil }
        return ("A pattern with a slash matches the whole path from the root; to match it at any depth, try", "**/\(pattern)")
    }

    // MARK: Text output

    private func table(_ matches: [BackupSearch.Match]) -> Table {
        let columns: [Table.Column] = [
            .init("BACKUP", minWidth: 25, priority: 10),
            .init("CREATED", minWidth: 16, priority: 3, optional: true),
            // The path is what was asked for: SIZE, MODIFIED and SHA256 go before it is cut.
            .path("PATH", prefersWhole: true),
            .number("SIZE", minWidth: 8, priority: 7, optional: true),
            .init("MODIFIED", minWidth: 16, priority: 4, optional: true),
            .init("SHA256", minWidth: 12, priority: 5, optional: true),
        ]
        let rows: [[Table.Cell]] = matches.map { match in
            let entry = match.entry
            let hasContent = entry.type == .file || entry.type == .hardlink
            return [Table.Cell(match.backup.id.rawValue, role: .accent), Table.Cell(Timestamp.localShort(match.backup.created)),
                    Table.Cell(EntryFormatting.pathWithLink(entry) + (entry.type == .directory ? "/" : "")),
                    Table.Cell(hasContent ? Units.bytes(entry.size) : "-"), Table.Cell(EntryFormatting.modified(entry)),
                    Table.Cell(entry.sha256.map { String($0.prefix(12)) } ?? "-", role: .muted)]
        }
        return Table(columns: columns, cells: rows)
    }

    /// The path as `restore` takes it (absolute), quoted for the shell when it needs to be;
    /// `PATH` for a name that cannot be typed as it is shown (not UTF-8, control characters).
    private static func restorePath(_ entry: ManifestEntry) -> String {
        guard let text = PathBytes.validString(entry.path), text == entry.displayPath else { return "PATH" }
        let path = "/" + text
        let plain = path.unicodeScalars.allSatisfy { scalar in
            scalar.properties.isAlphabetic || scalar.properties.numericType != nil || "/._-+,@%=:".unicodeScalars.contains(scalar)
        }
        if plain { return path }
        return "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    // MARK: JSON output

    /// The backup's id and creation time, then the manifest entry's own fields
    /// (`path` or `path_b64`, `type`, `size`, `mtime_ns`, `sha256`, …).
    private static func json(_ match: BackupSearch.Match) -> JSONValue {
        var object = JSONObject([
            ("backup", .string(match.backup.id.rawValue)),
            ("created", .string(Timestamp.iso8601(match.backup.created))),
        ])
        if case .object(let entry) = EntryFormatting.json(match.entry) {
            for (key, value) in entry.pairs { object[key] = value }
        }
        return .object(object)
    }
}

// MARK: - Arguments

extension ArgumentKey {
    /// The name or path pattern to look for.
    static let pattern = ArgumentKey("PATTERN")
}
