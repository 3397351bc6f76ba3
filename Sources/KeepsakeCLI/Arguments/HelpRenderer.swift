import TerminalUI

// MARK: - HelpRenderer

/// Renders `--help` screens in swift-argument-parser's layout:
///
///     OVERVIEW: Back up files or stdin into a compressed archive.
///
///     USAGE: keepsake backup [options] PATH...
///
///     ARGUMENTS:
///       PATH...             Files or directories to back up.
///
///     OPTIONS:
///       -d, --dest <dir>    Where backups are kept. (env: KEEPSAKE_DEST)
///
/// Text is word-wrapped to `width` columns; the right column continues under itself.
/// Headings (`OVERVIEW:`, `OPTIONS:`, …, colon included) pass through `heading` so the
/// caller can style them; the layout is computed on the plain text, so styling never
/// changes it. The result has no trailing newline.
enum HelpRenderer {

    // MARK: Layout constants

    /// The narrowest width laid out; narrower requests are treated as this.
    static let minimumWidth = 20
    /// Spaces before a label in a two-column row.
    static let indent = 2
    /// Least spaces between a label and its help text.
    static let gap = 2
    /// The widest the label column gets (swift-argument-parser's 26); longer labels sit on
    /// their own line with the help text below.
    static let maximumLabelColumn = 26
    /// The narrowest right column of a two-column table; narrower, texts go under labels.
    static let minimumTextColumn = 30
    /// Where a text under its label starts (as under an example).
    static let stackedIndent = 6

    // MARK: Command help

    /// The help screen of one command.
    static func render(
        _ spec: CommandSpec,
        programName: String = "keepsake",
        width: Int,
        heading: (String) -> String = { $0 }
    ) -> String {
        let width = max(width, minimumWidth)
        let arguments = spec.arguments.map { Row(label: $0.displayName, text: $0.annotatedHelp) }
        let options = spec.options.filter { !$0.hidden }.map(optionRow)
        let column = labelColumn(for: arguments + options, width: width)

        var sections: [[String]] = []
        sections.append(headed("OVERVIEW:", spec.abstract, width: width, heading: heading))
        if !spec.discussion.isEmpty {
            sections.append(wrap(spec.discussion, width: width))
        }
        sections.append(headed("USAGE:", spec.usage(programName: programName), width: width, heading: heading))
        if !arguments.isEmpty {
            sections.append(table("ARGUMENTS:", arguments, column: column, width: width, heading: heading))
        }
        if !options.isEmpty {
            sections.append(table("OPTIONS:", options, column: column, width: width, heading: heading))
        }
        if !spec.examples.isEmpty {
            sections.append(examples(spec.examples, width: width, heading: heading))
        }
        return join(sections)
    }

    // MARK: Top-level help

    /// The help screen of the program itself (`keepsake --help`): overview, usage, the
    /// commands, the global options, the exit codes, and a pointer to command help.
    static func renderTopLevel(
        programName: String = "keepsake",
        abstract: String,
        commands: [(name: String, abstract: String)],
        globalOptions: [OptionSpec],
        exitCodes: [(code: Int32, meaning: String)],
        width: Int,
        heading: (String) -> String = { $0 }
    ) -> String {
        let width = max(width, minimumWidth)
        let commandRows = commands.map { Row(label: $0.name, text: $0.abstract) }
        let optionRows = globalOptions.filter { !$0.hidden }.map(optionRow)
        let codeRows = exitCodes.map { Row(label: String($0.code), text: $0.meaning) }
        let column = labelColumn(for: commandRows + optionRows + codeRows, width: width)

        var sections: [[String]] = []
        sections.append(headed("OVERVIEW:", abstract, width: width, heading: heading))
        sections.append(headed("USAGE:", "\(programName) \(CommandSpec.topLevelSynopsis)", width: width, heading: heading))
        if !commandRows.isEmpty {
            sections.append(table("COMMANDS:", commandRows, column: column, width: width, heading: heading))
        }
        if !optionRows.isEmpty {
            sections.append(table("OPTIONS:", optionRows, column: column, width: width, heading: heading))
        }
        if !codeRows.isEmpty {
            sections.append(table("EXIT CODES:", codeRows, column: column, width: width, heading: heading))
        }
        sections.append(wrap("See '\(programName) <command> --help' for help on a command.", width: width))
        return join(sections)
    }

    // MARK: Sections

    /// One label and its help text.
    private struct Row {
        let label: String
        let text: String
    }

    /// An option's row. Each annotation keeps its label with its first word, so a wrap
    /// never leaves `(env:` alone at the end of a line.
    private static func optionRow(_ option: OptionSpec) -> Row {
        let notes = option.helpAnnotations.map { note in
            var note = note
            if let space = note.firstIndex(of: " ") {
                note.replaceSubrange(space...space, with: String(DisplayWidth.noBreakSpace))
            }
            return note
        }
        let text = ([option.help].filter { !$0.isEmpty } + notes).joined(separator: " ")
        return Row(label: option.helpLabel, text: text)
    }

    /// Where the right column starts: just past the longest label, at most
    /// `maximumLabelColumn` and at most half the width, so the help text keeps room.
    private static func labelColumn(for rows: [Row], width: Int) -> Int {
        let longest = rows.map(\.label.count).max() ?? 0
        return min(indent + longest + gap, maximumLabelColumn, width / 2)
    }

    /// `HEADING: text`, the text wrapped and hanging under itself.
    private static func headed(_ title: String, _ text: String, width: Int, heading: (String) -> String) -> [String] {
        let prefix = title + " "
        let lines = wrap(text, width: width, firstPrefix: prefix, restPrefix: spaces(prefix.count))
        // Style only the title, after the layout is fixed on plain text.
        return lines.enumerated().map { number, line in
            number == 0 ? heading(title) + line.dropFirst(title.count) : line
        }
    }

    /// A heading line followed by two-column rows; when the right column would be narrower
    /// than `minimumTextColumn`, each label on its own line with its text under it.
    private static func table(_ title: String, _ rows: [Row], column: Int, width: Int, heading: (String) -> String) -> [String] {
        var lines = [heading(title)]
        let stacked = width - column < minimumTextColumn
        for row in rows {
            let labelPrefix = spaces(indent)
            if stacked {
                lines += wrap(row.label, width: width, firstPrefix: labelPrefix, restPrefix: spaces(indent * 2))
                lines += wrap(row.text, width: width, firstPrefix: spaces(stackedIndent), restPrefix: spaces(stackedIndent))
            } else if indent + row.label.count + gap <= column {
                let first = labelPrefix + row.label + spaces(column - indent - row.label.count)
                lines += wrap(row.text, width: width, firstPrefix: first, restPrefix: spaces(column))
            } else {
                // Too long for the column: the label gets its own line(s), the text goes below.
                lines += wrap(row.label, width: width, firstPrefix: labelPrefix, restPrefix: spaces(indent * 2))
                if !row.text.isEmpty {
                    lines += wrap(row.text, width: width, firstPrefix: spaces(column), restPrefix: spaces(column))
                }
            }
        }
        return lines
    }

    /// Each example: the command indented by 2, its explanation below indented by 6.
    private static func examples(_ examples: [CommandSpec.Example], width: Int, heading: (String) -> String) -> [String] {
        var lines = [heading("EXAMPLES:")]
        for (number, example) in examples.enumerated() {
            if number > 0 { lines.append("") }
            lines += wrap(example.command, width: width, firstPrefix: spaces(2), restPrefix: spaces(4))
            lines += wrap(example.explanation, width: width, firstPrefix: spaces(6), restPrefix: spaces(6))
        }
        return lines
    }

    // MARK: Helpers

    private static func join(_ sections: [[String]]) -> String {
        sections.map { $0.joined(separator: "\n") }.joined(separator: "\n\n")
    }

    /// `DisplayWidth.wrap`, with the no-break spaces that glue annotations printed as plain
    /// spaces (so `grep 'default: zstd'` finds them).
    private static func wrap(_ text: String, width: Int, firstPrefix: String = "", restPrefix: String = "") -> [String] {
        DisplayWidth.wrap(text, width: width, firstPrefix: firstPrefix, restPrefix: restPrefix).map { line in
            // A glued annotation longer than a whole line is cut at its no-break space: no trailing space then.
            var plain = Substring(String(line.map { $0 == DisplayWidth.noBreakSpace ? " " : $0 }))
            while plain.last == " " { plain = plain.dropLast() }
            return String(plain)
        }
    }

    private static func spaces(_ count: Int) -> String {
        String(repeating: " ", count: max(0, count))
    }
}
