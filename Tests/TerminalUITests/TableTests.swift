import XCTest
@testable import TerminalUI

final class TableTests: KeepsakeTestCase {

    // MARK: Fixture

    /// A backup list with Korean and emoji file names and badges.
    private let backups = Table(
        columns: [
            .init("ID", priority: 1),
            .init("KIND", minWidth: 6),
            .path("SOURCE"),
            .number("FILES", priority: 2),
            .number("SIZE", priority: 2),
        ],
        cells: [
            ["20261129T023000Z-3f9a1c2e", .badge(Badge("FULL", emphasis: .small)), "/home/me/사진_백업_2024.jpg", "1,204", "1.2 GiB"],
            ["20261130T023000Z-aa11bb22", .badge(Badge("INCR", emphasis: .small)), "/home/me/🎉party.txt", "3", "340 B"],
            ["20261201T023000Z-cc33dd44", .badge(Badge("INCR", emphasis: .small)), "/home/me/Documents/reports/2024/annual-report-final.pdf", "12", "12.3 MiB"],
        ]
    )

    // MARK: Plain output

    func testPlainAt120() {
        XCTAssertEqual(plain(backups, width: 120), """
            ID                         KIND    SOURCE                                                   FILES      SIZE
            ─────────────────────────  ──────  ───────────────────────────────────────────────────────  ─────  ────────
            20261129T023000Z-3f9a1c2e  [FULL]  /home/me/사진_백업_2024.jpg                              1,204   1.2 GiB
            20261130T023000Z-aa11bb22  [INCR]  /home/me/🎉party.txt                                         3     340 B
            20261201T023000Z-cc33dd44  [INCR]  /home/me/Documents/reports/2024/annual-report-final.pdf     12  12.3 MiB

            """)
    }

    func testPlainAt80ShrinksTheFlexiblePathColumnWithMiddleEllipsis() {
        XCTAssertEqual(plain(backups, width: 80), """
            ID                         KIND    SOURCE                        FILES      SIZE
            ─────────────────────────  ──────  ────────────────────────────  ─────  ────────
            20261129T023000Z-3f9a1c2e  [FULL]  /home/me/사진_백업_2024.jpg   1,204   1.2 GiB
            20261130T023000Z-aa11bb22  [INCR]  /home/me/🎉party.txt              3     340 B
            20261201T023000Z-cc33dd44  [INCR]  /home/me/Docum…ort-final.pdf     12  12.3 MiB

            """)
    }

    /// A number is never cut: at 40 columns the lower-priority number column goes, the
    /// other stays whole, and the underline is as wide as each column.
    func testPlainAt40DropsANumberColumnRatherThanCutNumbers() {
        XCTAssertEqual(plain(backups, width: 40), """
            ID        KIND    SOURCE            SIZE
            ────────  ──────  ────────────  ────────
            2026112…  [FULL]  /home/…4.jpg   1.2 GiB
            2026113…  [INCR]  /home/…y.txt     340 B
            2026120…  [INCR]  /home/…l.pdf  12.3 MiB

            """)
    }

    /// An optional column with no text in any row is left out whatever the width.
    func testAnEmptyOptionalColumnIsLeftOut() {
        let table = Table(columns: [.init("ID"), .path("PATH"), .init("TAGS", optional: true)],
                          cells: [["a", "/x", ""], ["b", "/y", ""]])
        XCTAssertEqual(table.visibleColumns(for: 200), [0, 1])
    }

    func testOptionalColumnsAreLeftOutLowestPriorityFirstWhenMinimumsDoNotFit() {
        let table = Table(
            columns: [
                .init("ID", minWidth: 10, priority: 9),
                .init("WHEN", minWidth: 10, priority: 5, optional: true),
                .number("SIZE", minWidth: 8, priority: 7),
                .init("TAGS", minWidth: 6, priority: 1, optional: true),
            ],
            rows: [["0123456789", "2026-11-29", "1.2 GiB", "daily"]]
        )
        XCTAssertEqual(plain(table, width: 40), """
            ID          WHEN           SIZE  TAGS
            ──────────  ──────────  ───────  ─────
            0123456789  2026-11-29  1.2 GiB  daily

            """)
        XCTAssertEqual(plain(table, width: 34), """
            ID          WHEN           SIZE
            ──────────  ──────────  ───────
            0123456789  2026-11-29  1.2 GiB

            """)
        XCTAssertEqual(plain(table, width: 20), """
            ID             SIZE
            ──────────  ───────
            0123456789  1.2 GiB

            """)
    }

    func testLinesStayAlignedWithKoreanAndEmojiCells() {
        for width in [40, 60, 80, 100, 120] {
            let lines = backups.render(in: .plain(width: width))
            assertRectangular(lines)
            XCTAssertLessThanOrEqual(DisplayWidth.width(of: lines[0]), width)
            assertRectangular(backups.render(in: RenderContext(width: width, colorEnabled: true)))
        }
    }

    func testRenderingRules() {
        // Filled badges trade their brackets for a coloured block of the same width.
        assertRenderingRules(backups, normalize: Self.bracketBadges)
    }

    private static func bracketBadges(_ line: String) -> String {
        line.replacingOccurrences(of: " FULL ", with: "[FULL]").replacingOccurrences(of: " INCR ", with: "[INCR]")
    }

    // MARK: Greppable plain mode

    func testPlainModeIsGreppable() {
        let text = plain(backups, width: 120)
        XCTAssertFalse(text.contains("\u{1B}"))
        for line in text.split(separator: "\n") {
            XCTAssertFalse(line.hasSuffix(" "), "trailing space: \(line)")
        }
        // Every data row splits into five fields on runs of two or more spaces.
        let rows = text.split(separator: "\n").dropFirst(2)
        for row in rows {
            let fields = row.components(separatedBy: "  ").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            XCTAssertEqual(fields.count, 5, String(row))
        }
    }

    func testColourStylesHeaderAndBadges() {
        let text = coloured(backups, width: 120)
        XCTAssertTrue(text.contains("\u{1B}[1mID\u{1B}[0m"))
        XCTAssertTrue(text.contains("\u{1B}[1;30;46m FULL \u{1B}[0m"))
        XCTAssertEqual(Self.bracketBadges(DisplayWidth.stripANSI(text)), plain(backups, width: 120))
    }

    // MARK: Layout rules

    func testColumnWidthsFitAndRespectMinimums() {
        XCTAssertEqual(backups.columnWidths(for: 200), [25, 6, 55, 5, 8])
        XCTAssertEqual(backups.columnWidths(for: 80), [25, 6, 28, 5, 8])
        let narrow = backups.columnWidths(for: 10)
        XCTAssertEqual(narrow, [4, 6, 12, 0, 0], "numbers are left out, not cut")
        XCTAssertTrue(backups.render(in: .plain(width: 10)).allSatisfy { DisplayWidth.width(of: $0) <= 10 })
    }

    func testFlexibleColumnsShrinkEvenly() {
        let table = Table(
            columns: [.init("A", flexible: true), .init("B", flexible: true), .init("KEEP")],
            rows: [["aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbb", "keep-this"]]
        )
        XCTAssertEqual(table.columnWidths(for: 30), [8, 9, 9])
        XCTAssertEqual(plain(table, width: 30), """
            A         B          KEEP
            ────────  ─────────  ─────────
            aaaaaaa…  bbbbbbbb…  keep-this

            """)
    }

    func testMissingCellsHeaderlessAndControlCharacters() {
        let table = Table(
            columns: [.init("NAME"), .number("N"), .init("NOTE")],
            rows: [["a\nb", "1"], ["tab\there", "22", "x"]],
            showsHeader: false
        )
        XCTAssertEqual(plain(table, width: 40), """
            a b        1
            tab here  22  x

            """)
    }

    func testCenteredColumnAndCustomSpacing() {
        let table = Table(
            columns: [.init("LEFT"), .init("MID", alignment: .center), .number("R")],
            cells: [["x", "ab", "1"]],
            columnSpacing: 3,
            showsSeparator: false
        )
        XCTAssertEqual(plain(table, width: 40), """
            LEFT   MID   R
            x      ab    1

            """)
    }

    func testEmptyTable() {
        XCTAssertEqual(Table(columns: [], rows: []).render(in: .plain()), [])
        XCTAssertEqual(plain(Table(columns: [.init("ONLY")], rows: []), width: 40), "ONLY\n────\n")
    }

    /// When even the minimum widths do not fit, rows are cut with an ellipsis but the rule
    /// under the header is only shortened: an ellipsis there would read as a cut value.
    func testTheRuleIsCutWithoutAnEllipsis() {
        let table = Table(columns: [.init("ID", minWidth: 10), .init("REASON", minWidth: 12)],
                          cells: [[Table.Cell("0123456789"), Table.Cell("last snapshot #1")]])
        let lines = table.render(in: .plain(width: 20))
        XCTAssertEqual(lines[1], String(repeating: "─", count: 10) + "  " + String(repeating: "─", count: 8))
        XCTAssertTrue(lines[2].hasSuffix("…"), lines[2])
    }
}
