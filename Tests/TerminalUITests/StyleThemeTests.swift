import XCTest
@testable import TerminalUI

final class StyleThemeTests: KeepsakeTestCase {

    func testSequencesForAttributesAndColours() {
        XCTAssertEqual(Style(foreground: .red, bold: true).openSequence, "\u{1B}[1;31m")
        XCTAssertEqual(Style(background: .brightBlue).openSequence, "\u{1B}[104m")
        XCTAssertEqual(Style(foreground: .indexed(208), background: .indexed(17)).openSequence, "\u{1B}[38;5;208;48;5;17m")
        XCTAssertEqual(Style(dim: true, italic: true, underline: true, reverse: true).parameters, ["2", "3", "4", "7"])
        XCTAssertEqual(Style.plain.openSequence, "")
        XCTAssertTrue(Style.plain.isPlain)
    }

    func testApplyOnlyWhenEnabled() {
        let style = Style(foreground: .green)
        XCTAssertEqual(style.apply(to: "ok", enabled: false), "ok")
        XCTAssertEqual(style.apply(to: "ok", enabled: true), "\u{1B}[32mok\u{1B}[0m")
        XCTAssertEqual(style.apply(to: "", enabled: true), "")
        XCTAssertEqual(Style.plain.apply(to: "ok", enabled: true), "ok")
    }

    func testNestedStylesReopenAfterInnerReset() {
        let inner = Style(bold: true).apply(to: "b", enabled: true)
        let outer = Style(foreground: .red).apply(to: "a" + inner + "c", enabled: true)
        XCTAssertEqual(outer, "\u{1B}[31ma\u{1B}[1mb\u{1B}[0m\u{1B}[31mc\u{1B}[0m")
    }

    func testMerging() {
        let merged = Style(foreground: .red).merging(Style(background: .white, bold: true))
        XCTAssertEqual(merged, Style(foreground: .red, background: .white, bold: true))
        XCTAssertEqual(Style(foreground: .red).bolded(), Style(foreground: .red, bold: true))
    }

    func testThemeRolesAndFill() {
        let theme = Theme.standard
        XCTAssertEqual(theme.style(for: .success).foreground, .green)
        XCTAssertEqual(theme.style(for: .danger).foreground, .red)
        XCTAssertEqual(theme.style(for: .warning).foreground, .yellow)
        XCTAssertTrue(theme.style(for: .heading).bold)
        XCTAssertTrue(theme.style(for: .muted).dim)
        XCTAssertEqual(theme.style(for: .plain), .plain)
        XCTAssertEqual(theme.fill(for: .success), Style(foreground: .black, background: .green, bold: true))
        XCTAssertEqual(theme.fill(for: .heading), Style(bold: true, reverse: true))
    }

    func testRenderContextHelpers() {
        let context = RenderContext(width: 0, colorEnabled: true)
        XCTAssertEqual(context.width, 1)
        XCTAssertEqual(context.withWidth(30).width, 30)
        XCTAssertEqual(context.apply(.danger, to: "x"), "\u{1B}[31mx\u{1B}[0m")
        XCTAssertEqual(RenderContext.plain().apply(.danger, to: "x"), "x")
        XCTAssertEqual(Look.role(.success).resolve(in: .standard), Theme.standard.success)
        XCTAssertEqual(Look.style(Style(italic: true)).resolve(in: .standard), Style(italic: true))
    }
}
