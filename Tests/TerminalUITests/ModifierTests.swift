import XCTest
@testable import TerminalUI

final class ModifierTests: KeepsakeTestCase {

    // MARK: Shadow

    func testShadowDrawsRightAndBelowInPlainMode() {
        let card = Box("Hello 🎉", corners: .square).shadow()
        let expected = [
            "┌──────────┐ ",
            "│ Hello 🎉 │░",
            "└──────────┘░",
            " ░░░░░░░░░░░░",
        ]
        for width in [40, 80, 120] {
            XCTAssertEqual(card.render(in: .plain(width: width)), expected)
        }
        assertRectangular(card.render(in: .plain(width: 40)))
        assertRenderingRules(card)
    }

    func testShadowCustomGlyphAndColour() {
        XCTAssertEqual(Text("ab\ncd").shadow("▒").render(in: .plain(width: 40)), ["ab ", "cd▒", " ▒▒"])
        XCTAssertEqual(
            Text("ab").shadow().render(in: RenderContext(width: 40, colorEnabled: true)),
            ["ab ", " \u{1B}[2m░░\u{1B}[0m"]
        )
        XCTAssertEqual(Text("").shadow().render(in: .plain(width: 40)), [" ", " ░"])
    }

    func testShadowUsesOneCellOfWidth() {
        let lines = Text("aaaa bbbb").shadow().render(in: .plain(width: 5))
        XCTAssertEqual(lines, ["aaaa ", "bbbb░", " ░░░░"])
    }

    // MARK: Padding

    func testPadding() {
        XCTAssertEqual(plain(Text("padded text").padding(top: 1, leading: 4, bottom: 1), width: 40), "\n    padded text\n\n")
        XCTAssertEqual(plain(Text("one two three").padding(leading: 2, trailing: 4), width: 13), "  one two\n  three\n")
        XCTAssertEqual(plain(Text("x").padding(1), width: 40), "\n x\n\n")
        assertRenderingRules(Box("pad").padding(leading: 3), expectsColour: true)
    }

    func testModifiersComposeOnAnyComponent() {
        let composed = Stack([Header(title: "Keepsake"), Badge("OK", role: .success)])
            .padding(leading: 2)
            .shadow()
        XCTAssertEqual(composed.render(in: .plain(width: 40)), [
            "  Keepsake ",
            "  [ OK ]  ░",
            " ░░░░░░░░░░",
        ])
    }

    func testRenderString() {
        XCTAssertEqual(Text("a\nb").renderString(in: .plain()), "a\nb\n")
        XCTAssertEqual(Stack([]).renderString(in: .plain()), "")
    }
}
