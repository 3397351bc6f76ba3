import XCTest
@testable import TerminalUI

/// Text, HintLine, Header, Badge, Stack and KeyValueList.
final class ComponentTests: KeepsakeTestCase {

    // MARK: Text

    func testTextWrapsOrTruncates() {
        let text = "Everything is up to date and nothing needs to be backed up right now."
        XCTAssertEqual(plain(Text(text), width: 40), """
            Everything is up to date and nothing
            needs to be backed up right now.

            """)
        XCTAssertEqual(plain(Text(text, wraps: false), width: 40), "Everything is up to date and nothing ne…\n")
        XCTAssertEqual(plain(Text(text), width: 80), text + "\n")
        XCTAssertEqual(coloured(Text("warn", role: .warning), width: 40), "\u{1B}[33mwarn\u{1B}[0m\n")
        XCTAssertEqual(coloured(Text("x", style: Style(underline: true)), width: 40), "\u{1B}[4mx\u{1B}[0m\n")
        assertRenderingRules(Text(text, role: .accent))
    }

    // MARK: HintLine

    private let hint = HintLine("No backups yet in this destination. Create the first one with", command: "keepsake backup ~/Photos")

    func testHintLineKeepsCommandWhole() {
        XCTAssertEqual(plain(hint, width: 40), """
            No backups yet in this destination.
            Create the first one with
            keepsake backup ~/Photos

            """)
        XCTAssertEqual(plain(hint, width: 80), """
            No backups yet in this destination. Create the first one with
            keepsake backup ~/Photos

            """)
        XCTAssertEqual(plain(hint, width: 120), """
            No backups yet in this destination. Create the first one with keepsake backup ~/Photos

            """)
        // Wider than the line, the command still stands whole on a line of its own: pasted
        // from a wrapped hint, 'keepsake restore ID' would restore a whole backup.
        XCTAssertEqual(plain(HintLine("Run", command: "keepsake restore latest"), width: 10), """
            Run
            keepsake restore latest

            """)
        let long = HintLine("Restore one with:", command: "keepsake restore host_20261205T020000Z-0a1b2c3d home/ana/notes.txt --dest /mnt/usb")
        XCTAssertEqual(plain(long, width: 50), """
            Restore one with:
            keepsake restore host_20261205T020000Z-0a1b2c3d home/ana/notes.txt --dest /mnt/usb

            """)
    }

    func testHintLineColourMakesCommandBold() {
        XCTAssertEqual(
            coloured(HintLine("Run", command: "keepsake list"), width: 40),
            "Run \u{1B}[1mkeepsake list\u{1B}[0m\n"
        )
        assertRenderingRules(hint)
    }

    // MARK: Header

    private let header = Header(
        title: "Restore",
        subtitle: "Choose a backup to restore from. Files are written to the target directory only.",
        symbol: "◆"
    )

    func testHeaderAtEachWidth() {
        XCTAssertEqual(plain(header, width: 40), """
            ◆ Restore
            Choose a backup to restore from. Files
            are written to the target directory
            only.

            """)
        let wide = """
            ◆ Restore
            Choose a backup to restore from. Files are written to the target directory only.

            """
        XCTAssertEqual(plain(header, width: 80), wide)
        XCTAssertEqual(plain(header, width: 120), wide)
        XCTAssertEqual(plain(Header(title: "Keepsake"), width: 40), "Keepsake\n")
        XCTAssertEqual(plain(Header(title: "A long title here", symbol: "◆"), width: 10), "◆ A long\n  title\n  here\n")
    }

    func testHeaderColour() {
        XCTAssertEqual(coloured(Header(title: "Keepsake", subtitle: "backups", symbol: "◆"), width: 40), """
            \u{1B}[36m◆\u{1B}[0m \u{1B}[1mKeepsake\u{1B}[0m
            \u{1B}[2mbackups\u{1B}[0m

            """)
        assertRenderingRules(header)
    }

    // MARK: Badge

    func testBadgePlainBracketsPerEmphasis() {
        XCTAssertEqual(plain(Badge("OK", role: .success, emphasis: .big), width: 40), "[  OK  ]\n")
        XCTAssertEqual(plain(Badge("CORRUPT", role: .danger), width: 40), "[ CORRUPT ]\n")
        XCTAssertEqual(plain(Badge("LOCKED", role: .warning, emphasis: .small), width: 40), "[LOCKED]\n")
        XCTAssertEqual(Badge("FULL").width, 8)
        XCTAssertEqual(Badge("FULL", emphasis: .small).plainText, "[FULL]")
    }

    func testBadgeColourFilledAndPlainKeepWidth() {
        let filled = Badge("OK", role: .success, emphasis: .big)
        let context = RenderContext(width: 40, colorEnabled: true)
        XCTAssertEqual(filled.text(in: context), "\u{1B}[1;30;42m   OK   \u{1B}[0m")
        let outline = Badge("CORRUPT", role: .danger, filled: false)
        XCTAssertEqual(outline.text(in: context), "\u{1B}[2m[\u{1B}[0m \u{1B}[1;31mCORRUPT\u{1B}[0m \u{1B}[2m]\u{1B}[0m")
        // Without a role colour a filled badge uses reverse video.
        XCTAssertEqual(Badge("INCR", role: .emphasis, emphasis: .small).text(in: context), "\u{1B}[1;7m INCR \u{1B}[0m")
        for badge in [filled, outline, Badge("X", emphasis: .small)] {
            XCTAssertEqual(DisplayWidth.width(of: badge.text(in: context)), badge.width)
        }
        assertRenderingRules(outline)
    }

    func testBadgeTruncatesLabelWhenNarrow() {
        XCTAssertEqual(plain(Badge("CORRUPTED", emphasis: .big), width: 8), "[  C…  ]\n")
    }

    // MARK: Stack

    func testStackKeepsArrayOrderWithSpacing() {
        let stack = Stack([
            Header(title: "Keepsake"),
            Text("Everything is up to date."),
            Stack([]),  // empty children take no space
            HintLine("To see all backups, run", command: "keepsake list"),
        ], spacing: 1)
        let expected = """
            Keepsake

            Everything is up to date.

            To see all backups, run keepsake list

            """
        for width in [40, 80, 120] {
            XCTAssertEqual(plain(stack, width: width), expected)
        }
        XCTAssertEqual(plain(Stack([Text("a"), Text("b")]), width: 40), "a\nb\n")
        assertRenderingRules(stack)
    }

    // MARK: KeyValueList

    private let summary = KeyValueList([
        ("Source", "/home/me/Photos"),
        ("Files", "1,204"),
        ("Destination", "/mnt/backup/keepsake, a folder on the external disk named 사진"),
    ])

    func testKeyValueListAlignsValues() {
        XCTAssertEqual(plain(summary, width: 40), """
            Source:      /home/me/Photos
            Files:       1,204
            Destination: /mnt/backup/keepsake, a
                         folder on the external disk
                         named 사진

            """)
        let wide = """
            Source:      /home/me/Photos
            Files:       1,204
            Destination: /mnt/backup/keepsake, a folder on the external disk named 사진

            """
        XCTAssertEqual(plain(summary, width: 80), wide)
        XCTAssertEqual(plain(summary, width: 120), wide)
    }

    func testKeyValueListKoreanKeysAndEmptyValues() {
        let list = KeyValueList(items: [
            .init("파일", "12"),
            .init("Status", "OK", valueRole: .success),
            .init("Note", ""),
        ])
        XCTAssertEqual(plain(list, width: 40), """
            파일:   12
            Status: OK
            Note:

            """)
        XCTAssertEqual(
            coloured(KeyValueList(items: [.init("A", "ok", valueRole: .success)]), width: 40),
            "\u{1B}[2mA:\u{1B}[0m \u{1B}[32mok\u{1B}[0m\n"
        )
        XCTAssertEqual(KeyValueList(items: []).render(in: .plain()), [])
        assertRenderingRules(summary)
    }

    /// A value holding a word too long for the value column (a file name) goes under its
    /// label, whole; the other rows keep their column.
    func testKeyValueListPutsALongWordUnderItsLabel() {
        let list = KeyValueList([("Kind", "full"), ("Archive", "vm_20261129T151522Z-a981a63d.tar.zst")])
        XCTAssertEqual(plain(list, width: 40), """
            Kind:    full
            Archive:
              vm_20261129T151522Z-a981a63d.tar.zst

            """)
        XCTAssertEqual(plain(list, width: 80), """
            Kind:    full
            Archive: vm_20261129T151522Z-a981a63d.tar.zst

            """)
    }
}
