@testable import KeepsakeCLI
import Foundation
import TerminalUI
import XCTest

/// Help screens compared with literals, layout rules, and word wrapping.
final class HelpRendererTests: KeepsakeTestCase {

    // MARK: Fixtures

    private let backup = CommandSpec(
        name: "backup",
        abstract: "Back up files or directories into a compressed archive.",
        discussion: "Each run writes one archive and its manifest to the destination. Nothing is visible until the backup is complete.",
        arguments: [ArgumentSpec(ArgumentKey("PATH"), help: "Files or directories to back up; '-' reads stdin.", repeating: true)],
        options: [
            OptionSpec(.dest, short: "d", kind: .value(valueName: "dir"), environment: "KEEPSAKE_DEST", help: "Where backups are kept."),
            OptionSpec(
                .compression, short: "c", kind: .value(valueName: "codec"),
                allowedValues: ["zstd", "gzip", "xz", "lz4", "none"], defaultDescription: "zstd",
                help: "The compression codec."
            ),
            OptionSpec(.exclude, kind: .value(valueName: "pattern"), repeatable: true, help: "Skip paths matching the glob pattern."),
            OptionSpec(.quiet, short: "q", help: "Print nothing but errors."),
            OptionSpec(OptionKey("debug-scan"), help: "Internal.", hidden: true),
            .help,
        ],
        examples: [
            .init(command: "keepsake backup ~/Documents --dest /media/usb/backups", explanation: "Back up your documents to a USB disk."),
            .init(command: "pg_dump shop | keepsake backup - --dest /srv/backups", explanation: "Back up a database dump from stdin."),
        ]
    )

    private let restore = CommandSpec(
        name: "restore",
        abstract: "Restore all or part of a backup.",
        arguments: [
            ArgumentSpec(ArgumentKey("BACKUP"), help: "A backup id, a unique prefix, or 'latest'."),
            ArgumentSpec(ArgumentKey("TARGET"), help: "Where to restore.", optional: true),
        ]
    )

    private let commands: [(name: String, abstract: String)] = [
        ("backup", "Back up files or stdin."),
        ("list", "List the backups in a destination."),
        ("restore", "Restore all or part of a backup."),
    ]

    private let globalOptions = [
        OptionSpec(
            .color, kind: .value(valueName: "when"), allowedValues: ["auto", "always", "never"],
            defaultDescription: "auto", help: "When to use colour."
        ),
        OptionSpec.help,
    ]

    private let exitCodes: [(code: Int32, meaning: String)] = [
        (0, "Success."),
        (1, "Failure."),
        (2, "Usage error."),
        (3, "Finished, but some files could not be read."),
        (130, "Interrupted."),
    ]

    private func topLevel(width: Int, heading: (String) -> String = { $0 }) -> String {
        HelpRenderer.renderTopLevel(
            abstract: "Back up directories into open-format archives.",
            commands: commands, globalOptions: globalOptions, exitCodes: exitCodes,
            width: width, heading: heading
        )
    }

    // MARK: Literal screens

    func testCommandHelpAt80Columns() {
        XCTAssertEqual(HelpRenderer.render(backup, width: 80), """
            OVERVIEW: Back up files or directories into a compressed archive.

            Each run writes one archive and its manifest to the destination. Nothing is
            visible until the backup is complete.

            USAGE: keepsake backup [options] PATH...

            ARGUMENTS:
              PATH...                 Files or directories to back up; '-' reads stdin.

            OPTIONS:
              -d, --dest <dir>        Where backups are kept. (env: KEEPSAKE_DEST)
              -c, --compression <codec>
                                      The compression codec. (default: zstd) (values: zstd,
                                      gzip, xz, lz4, none)
              --exclude <pattern>     Skip paths matching the glob pattern. (repeatable)
              -q, --quiet             Print nothing but errors.
              -h, --help              Show help information.

            EXAMPLES:
              keepsake backup ~/Documents --dest /media/usb/backups
                  Back up your documents to a USB disk.

              pg_dump shop | keepsake backup - --dest /srv/backups
                  Back up a database dump from stdin.
            """)
    }

    func testCommandHelpAt40Columns() {
        XCTAssertEqual(HelpRenderer.render(backup, width: 40), """
            OVERVIEW: Back up files or directories
                      into a compressed archive.

            Each run writes one archive and its
            manifest to the destination. Nothing is
            visible until the backup is complete.

            USAGE: keepsake backup [options] PATH...

            ARGUMENTS:
              PATH...
                  Files or directories to back up;
                  '-' reads stdin.

            OPTIONS:
              -d, --dest <dir>
                  Where backups are kept.
                  (env: KEEPSAKE_DEST)
              -c, --compression <codec>
                  The compression codec.
                  (default: zstd) (values: zstd,
                  gzip, xz, lz4, none)
              --exclude <pattern>
                  Skip paths matching the glob
                  pattern. (repeatable)
              -q, --quiet
                  Print nothing but errors.
              -h, --help
                  Show help information.

            EXAMPLES:
              keepsake backup ~/Documents --dest
                /media/usb/backups
                  Back up your documents to a USB
                  disk.

              pg_dump shop | keepsake backup -
                --dest /srv/backups
                  Back up a database dump from
                  stdin.
            """)
    }

    func testCommandWithOptionalArgumentAndNoOptions() {
        XCTAssertEqual(HelpRenderer.render(restore, width: 80), """
            OVERVIEW: Restore all or part of a backup.

            USAGE: keepsake restore BACKUP [TARGET]

            ARGUMENTS:
              BACKUP  A backup id, a unique prefix, or 'latest'.
              TARGET  Where to restore. (optional)
            """)
    }

    func testTopLevelHelpAt80Columns() {
        XCTAssertEqual(topLevel(width: 80), """
            OVERVIEW: Back up directories into open-format archives.

            USAGE: keepsake <command> [options]

            COMMANDS:
              backup          Back up files or stdin.
              list            List the backups in a destination.
              restore         Restore all or part of a backup.

            OPTIONS:
              --color <when>  When to use colour. (default: auto) (values: auto, always,
                              never)
              -h, --help      Show help information.

            EXIT CODES:
              0               Success.
              1               Failure.
              2               Usage error.
              3               Finished, but some files could not be read.
              130             Interrupted.

            See 'keepsake <command> --help' for help on a command.
            """)
    }

    func testTopLevelHelpAt40Columns() {
        XCTAssertEqual(topLevel(width: 40), """
            OVERVIEW: Back up directories into
                      open-format archives.

            USAGE: keepsake <command> [options]

            COMMANDS:
              backup
                  Back up files or stdin.
              list
                  List the backups in a destination.
              restore
                  Restore all or part of a backup.

            OPTIONS:
              --color <when>
                  When to use colour.
                  (default: auto) (values: auto,
                  always, never)
              -h, --help
                  Show help information.

            EXIT CODES:
              0
                  Success.
              1
                  Failure.
              2
                  Usage error.
              3
                  Finished, but some files could not
                  be read.
              130
                  Interrupted.

            See 'keepsake <command> --help' for help
            on a command.
            """)
    }

    // MARK: Headings

    func testHeadingsPassThroughClosureWithoutMovingText() {
        let bold = HelpRenderer.render(backup, width: 80) { "<b>\($0)</b>" }
        let lines = bold.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(lines.first, "<b>OVERVIEW:</b> Back up files or directories into a compressed archive.")
        XCTAssertTrue(lines.contains("<b>USAGE:</b> keepsake backup [options] PATH..."))
        for title in ["ARGUMENTS:", "OPTIONS:", "EXAMPLES:"] {
            XCTAssertTrue(lines.contains("<b>\(title)</b>"), title)
        }
        // Removing the styling gives back the plain screen exactly.
        let plain = bold.replacingOccurrences(of: "<b>", with: "").replacingOccurrences(of: "</b>", with: "")
        XCTAssertEqual(plain, HelpRenderer.render(backup, width: 80))
    }

    func testTopLevelHeadings() {
        let styled = topLevel(width: 80) { "*\($0)*" }
        for title in ["*OVERVIEW:* ", "*USAGE:* ", "\n*COMMANDS:*\n", "\n*OPTIONS:*\n", "\n*EXIT CODES:*\n"] {
            XCTAssertTrue(styled.contains(title), title)
        }
    }

    // MARK: Layout rules

    func testHiddenOptionsAreLeftOut() {
        XCTAssertFalse(HelpRenderer.render(backup, width: 80).contains("debug-scan"))
    }

    func testNoTrailingWhitespaceOrTrailingNewline() {
        for width in [20, 40, 80] {
            for screen in [HelpRenderer.render(backup, width: width), topLevel(width: width)] {
                XCTAssertFalse(screen.hasSuffix("\n"))
                for line in screen.split(separator: "\n") {
                    XCTAssertFalse(line.hasSuffix(" "), "width \(width): '\(line)'")
                }
            }
        }
    }

    func testUsageLines() {
        XCTAssertEqual(backup.usage(), "keepsake backup [options] PATH...")
        XCTAssertEqual(restore.usage(programName: "ks"), "ks restore BACKUP [TARGET]")
        XCTAssertEqual(CommandSpec(name: "list", abstract: "List.").usage(), "keepsake list")
        let hiddenOnly = CommandSpec(
            name: "gc", abstract: "Collect.",
            arguments: [ArgumentSpec(ArgumentKey("ID"), help: "", optional: true, repeating: true)],
            options: [OptionSpec(OptionKey("secret"), help: "", hidden: true)]
        )
        XCTAssertEqual(hiddenOnly.usage(), "keepsake gc [ID...]")
    }

    func testOptionLabelsAndAnnotations() {
        XCTAssertEqual(backup.options[0].helpLabel, "-d, --dest <dir>")
        XCTAssertEqual(backup.options[2].helpLabel, "--exclude <pattern>")
        XCTAssertEqual(OptionSpec.help.helpLabel, "-h, --help")
        XCTAssertEqual(
            backup.options[1].annotatedHelp,
            "The compression codec. (default: zstd) (values: zstd, gzip, xz, lz4, none)"
        )
        XCTAssertEqual(backup.options[0].annotatedHelp, "Where backups are kept. (env: KEEPSAKE_DEST)")
    }

    // MARK: Width

    func testNoLineExceedsTheWidth() {
        for width in 20...120 {
            for screen in [HelpRenderer.render(backup, width: width), HelpRenderer.render(restore, width: width), topLevel(width: width)] {
                for line in screen.split(separator: "\n") {
                    XCTAssertLessThanOrEqual(line.count, width, "width \(width): '\(line)'")
                }
            }
        }
    }

    func testNarrowerThanMinimumIsTreatedAsMinimum() {
        XCTAssertEqual(HelpRenderer.render(backup, width: 3), HelpRenderer.render(backup, width: HelpRenderer.minimumWidth))
    }

    // MARK: Annotations

    /// An annotation stays whole on one line and is printed with a plain space (for grep).
    func testAnnotationsAreGluedButPrintedWithPlainSpaces() {
        let text = HelpRenderer.render(backup, width: 44)
        XCTAssertFalse(text.contains(DisplayWidth.noBreakSpace))
        XCTAssertFalse(text.split(separator: "\n").contains { $0.hasSuffix("(env:") || $0.hasSuffix("(default:") }, text)
    }
}
