import XCTest
@testable import TerminalUI

// MARK: - Rendering helpers shared by the component tests

/// Plain (no colour) output of `component` at `width`, as one string with a trailing newline.
func plain(_ component: some Renderable, width: Int) -> String {
    component.renderString(in: .plain(width: width))
}

/// Coloured output of `component` at `width`.
func coloured(_ component: some Renderable, width: Int, theme: Theme = .standard) -> String {
    component.renderString(in: RenderContext(width: width, colorEnabled: true, theme: theme))
}

/// Checks the rules every component follows at `widths`: no line wider than the width,
/// no ESC byte without colour, and with colour the same text once escapes are stripped
/// (after `normalize`, for parts that differ by design such as filled badges).
func assertRenderingRules(
    _ component: some Renderable,
    widths: [Int] = [40, 80, 120],
    expectsColour: Bool = true,
    normalize: (String) -> String = { $0 },
    file: StaticString = #filePath,
    line: UInt = #line
) {
    for width in widths {
        let plainLines = component.render(in: .plain(width: width))
        let colourLines = component.render(in: RenderContext(width: width, colorEnabled: true))
        for text in plainLines {
            XCTAssertFalse(text.contains("\u{1B}"), "ESC in plain output at width \(width): \(text)", file: file, line: line)
            XCTAssertFalse(text.contains("\n"), "newline inside a line at width \(width)", file: file, line: line)
            XCTAssertLessThanOrEqual(DisplayWidth.width(of: text), width, "too wide at \(width): \(text)", file: file, line: line)
        }
        XCTAssertEqual(colourLines.map { normalize(DisplayWidth.stripANSI($0)) }, plainLines, "colour differs beyond escapes at \(width)", file: file, line: line)
        if expectsColour {
            XCTAssertTrue(colourLines.joined().contains("\u{1B}["), "no SGR sequence at width \(width)", file: file, line: line)
        }
    }
}

/// Asserts that every line has the same display width (a rectangular, aligned block).
func assertRectangular(_ lines: [String], file: StaticString = #filePath, line: UInt = #line) {
    let widths = Set(lines.map { DisplayWidth.width(of: DisplayWidth.stripANSI($0)) })
    XCTAssertEqual(widths.count, 1, "line widths differ: \(lines.map { DisplayWidth.width(of: $0) })\n" + lines.joined(separator: "\n"), file: file, line: line)
}

/// A thread-safe collector for writer closures.
final class OutputRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var chunks: [String] = []

    var all: [String] {
        lock.lock()
        defer { lock.unlock() }
        return chunks
    }

    var text: String { all.joined() }

    func record(_ chunk: String) {
        lock.lock()
        chunks.append(chunk)
        lock.unlock()
    }
}

/// A manually advanced clock for the progress renderer.
final class FakeClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Double = 1000

    var now: Double {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    func advance(_ seconds: Double) {
        lock.lock()
        current += seconds
        lock.unlock()
    }
}
