import XCTest
@testable import TerminalUI

final class BoxTests: KeepsakeTestCase {

    private let done = Box("Backup of 사진_백업_2024.jpg and 🎉party.txt finished in 42 s.", title: "Done")

    func testWrapsAt40() {
        XCTAssertEqual(plain(done, width: 40), """
            ╭─ Done ───────────────────────────╮
            │ Backup of 사진_백업_2024.jpg and │
            │ 🎉party.txt finished in 42 s.    │
            ╰──────────────────────────────────╯

            """)
    }

    func testShrinkWrapsAt80And120() {
        let expected = """
            ╭─ Done ─────────────────────────────────────────────────────────╮
            │ Backup of 사진_백업_2024.jpg and 🎉party.txt finished in 42 s. │
            ╰────────────────────────────────────────────────────────────────╯

            """
        XCTAssertEqual(plain(done, width: 80), expected)
        XCTAssertEqual(plain(done, width: 120), expected)
    }

    func testSquareFilledWithInsets() {
        let box = Box(
            lines: ["Destination locked", "Another run holds the lock since 02:30."],
            title: "LOCKED",
            corners: .square,
            insets: .symmetric(vertical: 1, horizontal: 2),
            fillsWidth: true
        )
        XCTAssertEqual(plain(box, width: 40), """
            ┌─ LOCKED ─────────────────────────────┐
            │                                      │
            │  Destination locked                  │
            │  Another run holds the lock since    │
            │  02:30.                              │
            │                                      │
            └──────────────────────────────────────┘

            """)
        for width in [40, 80, 120] {
            let lines = box.render(in: .plain(width: width))
            assertRectangular(lines)
            XCTAssertEqual(DisplayWidth.width(of: lines[0]), width)
        }
    }

    func testNestedComponents() {
        let box = Box(title: "Summary", content: [
            Header(title: "Keepsake", subtitle: "사진 backup"),
            KeyValueList([("Files", "1,204"), ("Size", "1.2 GiB")]),
        ])
        XCTAssertEqual(plain(box, width: 80), """
            ╭─ Summary ──────╮
            │ Keepsake       │
            │ 사진 backup    │
            │ Files: 1,204   │
            │ Size:  1.2 GiB │
            ╰────────────────╯

            """)
    }

    func testTitleWidensAndTruncates() {
        XCTAssertEqual(plain(Box("ok", title: "Title"), width: 40), """
            ╭─ Title ─╮
            │ ok      │
            ╰─────────╯

            """)
        XCTAssertEqual(plain(Box("ok", title: "A rather long title"), width: 12), """
            ╭─ A rat… ─╮
            │ ok       │
            ╰──────────╯

            """)
        XCTAssertEqual(plain(Box("ok", insets: .none), width: 40), "╭──╮\n│ok│\n╰──╯\n")
    }

    func testLinesStayAlignedWithWideCharacters() {
        let box = Box(lines: ["사진_백업_2024.jpg", "🎉party.txt", "👨‍👩‍👧 family", "e\u{301}te\u{301}", "漢字かなカナ"], title: "파일")
        for width in [12, 17, 20, 40, 80, 120] {
            let lines = box.render(in: .plain(width: width))
            assertRectangular(lines)
            XCTAssertTrue(lines.allSatisfy { DisplayWidth.width(of: $0) <= width })
        }
    }

    func testRenderingRules() {
        assertRenderingRules(done)
        assertRenderingRules(Box("x", corners: .square, fillsWidth: true))
    }

    func testColourOnlyStylesBorderAndTitle() {
        let text = coloured(Box("hi", title: "T"), width: 40)
        XCTAssertEqual(text, """
            \u{1B}[2m╭─\u{1B}[0m \u{1B}[1mT\u{1B}[0m \u{1B}[2m─╮\u{1B}[0m
            \u{1B}[2m│\u{1B}[0m hi  \u{1B}[2m│\u{1B}[0m
            \u{1B}[2m╰─────╯\u{1B}[0m

            """)
    }

    func testTinyWidths() {
        XCTAssertEqual(Box("hello").render(in: .plain(width: 2)), ["he", "ll", "o"])
        XCTAssertEqual(Box("hello").render(in: .plain(width: 3)), ["╭─╮", "│h│", "│e│", "│l│", "│l│", "│o│", "╰─╯"])
    }
}
