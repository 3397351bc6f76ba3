import XCTest
@testable import TerminalUI

final class TerminalCapabilitiesTests: KeepsakeTestCase {

    private func caps(
        _ environment: [String: String] = [:],
        tty: Bool = true,
        mode: ColorMode = .auto,
        measured: Int? = nil
    ) -> TerminalCapabilities {
        TerminalCapabilities(
            environment: environment, stdinIsTTY: tty, stdoutIsTTY: tty, stderrIsTTY: tty,
            colorMode: mode, measuredWidth: measured
        )
    }

    // MARK: Colour

    func testColourOnForTerminalsByDefault() {
        let value = caps(["TERM": "xterm-256color"])
        XCTAssertTrue(value.stdoutColor)
        XCTAssertTrue(value.stderrColor)
        XCTAssertTrue(value.renderContext().colorEnabled)
    }

    func testColourOffWhenStreamIsNotATerminal() {
        let value = TerminalCapabilities(
            environment: [:], stdinIsTTY: true, stdoutIsTTY: false, stderrIsTTY: true
        )
        XCTAssertFalse(value.stdoutColor)
        XCTAssertTrue(value.stderrColor)
        XCTAssertFalse(value.colorEnabled(for: .standardOutput))
        XCTAssertTrue(value.colorEnabled(for: .standardError))
        XCTAssertFalse(value.colorEnabled(for: .standardInput))
    }

    /// no-color.org: a non-empty NO_COLOR takes the colours away, not the other styling.
    func testNoColorRemovesColoursOnlyWhenNonEmpty() {
        let value = caps(["NO_COLOR": "1"])
        XCTAssertTrue(value.stdoutColor, "bold and dim stay on a terminal")
        XCTAssertFalse(value.colorsAllowed)
        XCTAssertTrue(caps(["NO_COLOR": ""]).colorsAllowed)
        XCTAssertTrue(caps(["NO_COLOR": "1"], mode: .always).colorsAllowed, "--color always wins")

        let context = value.renderContext(for: .standardOutput)
        let red = Style(foreground: .red, bold: true)
        XCTAssertEqual(context.apply(red, to: "x"), "\u{1B}[1mx\u{1B}[0m", "bold without the colour")
        XCTAssertEqual(context.apply(Style(foreground: .green), to: "x"), "x", "a colour alone emits nothing")
        XCTAssertEqual(Badge("OK", role: .success).text(in: context), "\u{1B}[1m[ OK ]\u{1B}[0m")
        let piped = caps(["NO_COLOR": "1"], tty: false).renderContext(for: .standardOutput)
        XCTAssertEqual(piped.apply(red, to: "x"), "x", "not a terminal: no escape sequences at all")
    }

    func testDumbTerminalDisablesColourAndAnimation() {
        let value = caps(["TERM": "dumb"])
        XCTAssertFalse(value.stdoutColor)
        XCTAssertTrue(value.isDumbTerminal)
        XCTAssertFalse(value.canAnimate)
        XCTAssertTrue(caps(["TERM": "xterm"]).canAnimate)
    }

    func testColorModeAlwaysAndNever() {
        let forced = caps(["NO_COLOR": "1", "TERM": "dumb"], tty: false, mode: .always)
        XCTAssertTrue(forced.stdoutColor)
        XCTAssertTrue(forced.stderrColor)
        XCTAssertFalse(caps(["TERM": "xterm"], mode: .never).stdoutColor)
        XCTAssertEqual(ColorMode(rawValue: "always"), .always)
        XCTAssertEqual(ColorMode.allCases.map(\.rawValue), ["auto", "always", "never"])
    }

    // MARK: Width

    func testColumnsOverridesMeasuredWidth() {
        XCTAssertEqual(caps(["COLUMNS": "120"], measured: 100).width, 120)
        XCTAssertEqual(caps(["COLUMNS": " 60 "]).width, 60)
    }

    func testInvalidColumnsFallsBackToMeasuredThenDefault() {
        XCTAssertEqual(caps(["COLUMNS": "wide"], measured: 100).width, 100)
        XCTAssertEqual(caps(["COLUMNS": "0"]).width, 80)
        XCTAssertEqual(caps([:], measured: 0).width, 80)
        XCTAssertEqual(caps([:]).width, TerminalCapabilities.defaultWidth)
    }

    // MARK: Interaction

    func testPromptsNeedInteractiveStreams() {
        XCTAssertTrue(caps().canPrompt)
        let piped = TerminalCapabilities(environment: [:], stdinIsTTY: false, stdoutIsTTY: true, stderrIsTTY: true)
        XCTAssertFalse(piped.canPrompt)
    }

    func testPlainAndDetect() {
        let value = TerminalCapabilities.plain(width: 50)
        XCTAssertEqual(value.width, 50)
        XCTAssertFalse(value.stdoutColor || value.stderrColor || value.canPrompt || value.canAnimate)
        // Under the test runner the real decision must honour an explicit mode.
        XCTAssertFalse(TerminalCapabilities.detect(colorMode: .never, environment: [:]).stdoutColor)
        XCTAssertTrue(TerminalCapabilities.detect(colorMode: .always, environment: ["COLUMNS": "33"]).stdoutColor)
        XCTAssertEqual(TerminalCapabilities.detect(environment: ["COLUMNS": "33"]).width, 33)
    }

    /// A command's `--color` decides again on the terminal detected once: NO_COLOR still
    /// takes the colours away under `auto`, `always` brings them back, `never` drops styling.
    func testDecidingAgainForAnotherColorMode() {
        let detected = TerminalCapabilities(environment: ["NO_COLOR": "1", "COLUMNS": "50"], stdinIsTTY: true,
                                            stdoutIsTTY: true, stderrIsTTY: false)
        XCTAssertTrue(detected.stdoutColor)
        XCTAssertFalse(detected.colorsAllowed)
        let never = detected.with(colorMode: .never)
        XCTAssertFalse(never.stdoutColor || never.stderrColor)
        XCTAssertEqual(never.width, 50)
        let always = detected.with(colorMode: .always)
        XCTAssertTrue(always.stdoutColor && always.stderrColor && always.colorsAllowed)
        XCTAssertEqual(always.with(colorMode: .auto), detected, "back to auto is the detected terminal")
    }
}
