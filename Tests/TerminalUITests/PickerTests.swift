import XCTest
@testable import TerminalUI

final class PickerTests: KeepsakeTestCase {

    // MARK: State machine

    func testMovesWrapAndChoose() {
        var state = PickerState(itemCount: 3)
        state.handle(.down)
        state.handle(.down)
        XCTAssertEqual(state.selection, 2)
        state.handle(.down)
        XCTAssertEqual(state.selection, 0, "down wraps to the top")
        state.handle(.up)
        XCTAssertEqual(state.selection, 2, "up wraps to the bottom")
        state.handle(.home)
        XCTAssertEqual(state.selection, 0)
        state.handle(.end)
        XCTAssertEqual(state.selection, 2)
        XCTAssertNil(state.outcome)
        state.handle(.enter)
        XCTAssertEqual(state.outcome, .chosen(2))
        state.handle(.up)
        XCTAssertEqual(state.selection, 2, "keys after the outcome are ignored")
    }

    func testDigitsJumpAndCancel() {
        var state = PickerState(itemCount: 5)
        state.handle(.digit(4))
        XCTAssertEqual(state.selection, 3)
        state.handle(.digit(9))
        XCTAssertEqual(state.selection, 3, "out-of-range digits are ignored")
        state.handle(.digit(0))
        state.handle(.other)
        XCTAssertEqual(state.selection, 3)
        state.handle(.cancel)
        XCTAssertEqual(state.outcome, .cancelled)
    }

    func testScrollingKeepsSelectionVisible() {
        var state = PickerState(itemCount: 20, pageSize: 5)
        XCTAssertEqual(state.visibleRange, 0..<5)
        for _ in 0..<6 { state.handle(.down) }
        XCTAssertEqual(state.selection, 6)
        XCTAssertEqual(state.visibleRange, 2..<7)
        state.handle(.pageDown)
        XCTAssertEqual(state.selection, 11)
        XCTAssertEqual(state.visibleRange, 7..<12)
        state.handle(.end)
        XCTAssertEqual(state.visibleRange, 15..<20)
        state.handle(.pageUp)
        XCTAssertEqual(state.selection, 14)
        XCTAssertEqual(state.visibleRange, 14..<19)
        state.handle(.home)
        XCTAssertEqual(state.visibleRange, 0..<5)
        XCTAssertEqual(PickerState(itemCount: 20, selection: 50, pageSize: 5).visibleRange, 15..<20)
        XCTAssertEqual(PickerState(itemCount: 0).outcome, .cancelled)
    }

    func testKeyDecoding() {
        XCTAssertEqual(PickerState.keys(from: [0x1B, 0x5B, 0x41]), [.up])
        XCTAssertEqual(PickerState.keys(from: [0x1B, 0x4F, 0x42]), [.down])
        XCTAssertEqual(PickerState.keys(from: Array("\u{1B}[H\u{1B}[F\u{1B}[5~\u{1B}[6~\u{1B}[1~\u{1B}[4~".utf8)),
                       [.home, .end, .pageUp, .pageDown, .home, .end])
        XCTAssertEqual(PickerState.keys(from: Array("jkgGq3\r\n".utf8)),
                       [.down, .up, .home, .end, .cancel, .digit(3), .enter, .enter])
        XCTAssertEqual(PickerState.keys(from: [0x1B]), [.cancel])
        XCTAssertEqual(PickerState.keys(from: [0x03, 0x0E, 0x10, 0x78]), [.cancel, .down, .up, .other])
        XCTAssertEqual(PickerState.keys(from: Array("\u{1B}[2;5X".utf8)), [.other])
    }

    // MARK: Rendering

    private let picker = Picker(
        title: "Choose a backup",
        items: ["20261129T023000Z  FULL  사진_백업_2024.jpg", "20261130T023000Z  INCR  🎉party.txt", "20261201T023000Z  INCR  report.pdf"]
    )

    func testRenderPlain() {
        var state = picker.initialState()
        state.handle(.down)
        XCTAssertEqual(plain(PickerFrame(picker: picker, state: state), width: 80), """
            ? Choose a backup
              1  20261129T023000Z  FULL  사진_백업_2024.jpg
            › 2  20261130T023000Z  INCR  🎉party.txt
              3  20261201T023000Z  INCR  report.pdf
              ↑/↓ move · enter choose · esc cancel

            """)
        XCTAssertEqual(plain(PickerFrame(picker: picker, state: state), width: 40), """
            ? Choose a backup
              1  20261129T023000Z  FULL  사진_백업_…
            › 2  20261130T023000Z  INCR  🎉party.txt
              3  20261201T023000Z  INCR  report.pdf
              ↑/↓ move · enter choose · esc cancel

            """)
        assertRenderingRules(PickerFrame(picker: picker, state: state))
    }

    func testRenderScrolledList() {
        let long = Picker(title: "Pick", items: (1...12).map { "item \($0)" }, initialSelection: 11, pageSize: 4, hint: "")
        XCTAssertEqual(plain(PickerFrame(picker: long, state: long.initialState()), width: 40), """
            ? Pick
              ↑ 8 more
               9  item 9
              10  item 10
              11  item 11
            › 12  item 12

            """)
        var state = long.initialState()
        state.handle(.home)
        XCTAssertEqual(plain(PickerFrame(picker: long, state: state), width: 40), """
            ? Pick
            ›  1  item 1
               2  item 2
               3  item 3
               4  item 4
              ↓ 8 more

            """)
    }

    // MARK: Key loop

    func testChooseWithScriptedKeys() throws {
        let io = ScriptedPromptIO(keys: [Array("j".utf8), [0x1B, 0x5B, 0x42], [0x1B, 0x5B, 0x41], [0x0D]])
        let index = try picker.choose(using: io, context: .plain(width: 80))
        XCTAssertEqual(index, 1)
        XCTAssertEqual(io.rawSessionCount, 1)
        // Four frames drawn, then erased and replaced by a one-line summary.
        XCTAssertEqual(io.output.components(separatedBy: "? Choose a backup\n").count - 1, 4)
        XCTAssertTrue(io.output.hasSuffix("\r\u{1B}[5A\u{1B}[J? Choose a backup › 20261130T023000Z  INCR  🎉party.txt\n"))
    }

    func testCancelEndOfInputAndNonInteractive() {
        XCTAssertThrowsError(try picker.choose(using: ScriptedPromptIO(keys: [[0x1B]]), context: .plain())) { error in
            XCTAssertEqual(error as? PromptError, .cancelled(prompt: "Choose a backup"))
        }
        XCTAssertThrowsError(try picker.choose(using: ScriptedPromptIO(keys: [Array("j".utf8)]), context: .plain())) { error in
            XCTAssertEqual(error as? PromptError, .endOfInput(prompt: "Choose a backup"))
        }
        let quiet = ScriptedPromptIO(keys: [[0x0D]], isInteractive: false)
        XCTAssertThrowsError(try picker.choose(using: quiet, context: .plain())) { error in
            XCTAssertEqual(error as? PromptError, .notInteractive(prompt: "Choose a backup"))
        }
        XCTAssertEqual(quiet.output, "")
        XCTAssertThrowsError(try picker.choose(using: ScriptedPromptIO(), context: .plain(), noInput: true)) { error in
            XCTAssertEqual(error as? PromptError, .inputDisabled(prompt: "Choose a backup"))
        }
        XCTAssertThrowsError(try Picker(title: "Empty", items: []).choose(using: ScriptedPromptIO(), context: .plain())) { error in
            XCTAssertEqual(error as? PromptError, .noChoices(prompt: "Empty"))
        }
    }
}

/// Adapts a picker frame to `Renderable` so the shared rendering checks apply.
private struct PickerFrame: Renderable {
    let picker: Picker
    let state: PickerState

    func render(in context: RenderContext) -> [String] {
        picker.render(state: state, in: context)
    }
}
