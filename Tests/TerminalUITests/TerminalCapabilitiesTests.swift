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

    func testNoColorDisablesColourOnlyWhenNonEmpty() {
        XCTAssertFalse(caps(["NO_COLOR": "1"]).stdoutColor)
        XCTAssertTrue(caps(["NO_COLOR": ""]).stdoutColor)
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
        XCTAssertFalse(piped.isTTY(.standardInput))
        XCTAssertTrue(piped.isTTY(.standardError))
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
}
