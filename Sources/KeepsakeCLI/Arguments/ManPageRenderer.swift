import Foundation

// MARK: - ManPageRenderer

/// Renders keepsake(1) in roff (`man` macros) from the same command specs the help screens
/// use, so the page never disagrees with `--help`: `keepsake help --man`, installed by
/// `Scripts/install`.
enum ManPageRenderer {
    // MARK: Rendering

    /// The whole page: every command with its options and examples, the exit codes and the
    /// environment.
    static func render(commands: [CommandSpec], globalOptions: [OptionSpec], exitCodes: [(Int32, String)],
                       environment: [(String, String)], version: String, date: String) -> String {
        var lines = [
            ".TH KEEPSAKE 1 \"\(date)\" \"keepsake \(version)\" \"User Commands\"",
            ".SH NAME",
            "keepsake \\- \(escape(KeepsakeCLI.abstract.lowercasedFirst))",
            ".SH SYNOPSIS",
            ".B keepsake",
            ".I command",
            "[\\fIoptions\\fR]",
            ".SH DESCRIPTION",
            escape("Keepsake backs up files and folders into compressed, self-describing POSIX pax tar archives "
                + "with a manifest holding a SHA-256 for every file, keeps them in a folder, an S3 bucket or an rclone "
                + "remote, proves them intact, prunes them by a retention policy and restores all or part of any backup, "
                + "also from a lone archive file."),
            ".SH COMMANDS",
        ]
        for spec in commands {
            lines += [".SS \"\(escape(spec.usage()))\"", escape(spec.abstract)]
            if !spec.discussion.isEmpty {
                lines += [".PP", escape(spec.discussion)]
            }
            for option in spec.options where !option.hidden && !globalOptions.contains(option) {
                lines += Self.option(option)
            }
            for example in spec.examples {
                lines += [".PP", ".nf", escape(example.command), ".fi", ".RS", escape(example.explanation), ".RE"]
            }
        }
        lines.append(".SH \"GLOBAL OPTIONS\"")
        for option in globalOptions where !option.hidden { lines += Self.option(option) }
        lines.append(".SH \"EXIT STATUS\"")
        for (code, meaning) in exitCodes { lines += [".TP", ".B \(code)", escape(meaning)] }
        lines.append(".SH ENVIRONMENT")
        for (name, meaning) in environment { lines += [".TP", ".B \(escape(name))", escape(meaning)] }
        lines += [".SH \"SEE ALSO\"", ".BR tar (1),", ".BR zstd (1),", ".BR age (1),", ".BR rclone (1)"]
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: Pieces

    /// One option as a tagged paragraph.
    private static func option(_ option: OptionSpec) -> [String] {
        [".TP", ".B \(escape(option.helpLabel))", escape(option.annotatedHelp)]
    }

    /// `text` safe for roff: backslashes doubled, dashes as minus signs (so they can be
    /// searched and copied), a line that would start with `.` or `'` guarded, and
    /// characters beyond ASCII written as `\[uXXXX]`.
    static func escape(_ text: String) -> String {
        var escaped = text.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
        escaped = escaped.replacingOccurrences(of: "\n", with: "\n.br\n")
        if escaped.hasPrefix(".") || escaped.hasPrefix("'") { escaped = "\\&" + escaped }
        // Beyond ASCII as groff's named Unicode characters: troff reads bytes, not UTF-8.
        var ascii = ""
        for scalar in escaped.unicodeScalars {
            if scalar.isASCII {
                ascii.unicodeScalars.append(scalar)
            } else {
                let hex = String(scalar.value, radix: 16, uppercase: true)
                ascii += "\\[u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + "]"
            }
        }
        return ascii
    }
}

private extension String {
    /// The string with its first letter in lower case ("Back up…" → "back up…").
    var lowercasedFirst: String { prefix(1).lowercased() + dropFirst() }
}
