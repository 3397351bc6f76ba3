import Foundation

/// Choose one item from a list on a terminal: arrow keys or j/k move, 1–9 jump, Enter
/// chooses, Esc or q cancels; the twin of an image picker.
///
/// Drawing (`render(state:in:)`) is separate from the key loop (`choose`), and the
/// state machine is `PickerState`, so both are tested without a terminal. Without a
/// terminal, or with `noInput`, `choose` throws `PromptError` instead of waiting.
///
/// ```swift
/// let picker = Picker(title: "Choose a backup", items: ids)
/// let index = try picker.choose(using: TerminalPromptIO(), context: caps.renderContext(for: .standardError))
/// ```
public struct Picker: Sendable {

    // MARK: Properties

    /// The question shown above the list.
    public var title: String
    /// The choices, one line each (truncated to the width).
    public var items: [String]
    /// The item highlighted at the start.
    public var initialSelection: Int
    /// Items visible at once; the list scrolls beyond that.
    public var pageSize: Int
    /// The key help shown under the list.
    public var hint: String

    /// Creates a picker.
    public init(
        title: String,
        items: [String],
        initialSelection: Int = 0,
        pageSize: Int = 10,
        hint: String = "↑/↓ move · enter choose · esc cancel"
    ) {
        self.title = title
        self.items = items
        self.initialSelection = initialSelection
        self.pageSize = max(1, pageSize)
        self.hint = hint
    }

    /// The starting state.
    func initialState() -> PickerState {
        PickerState(itemCount: items.count, selection: initialSelection, pageSize: pageSize)
    }

    // MARK: Rendering

    /// The picker's lines for `state`: title, visible items with the selected one marked
    /// "›" (and in the accent style), "more" markers when scrolled, and the hint.
    public func render(state: PickerState, in context: RenderContext) -> [String] {
        let width = context.width
        var lines = DisplayWidth.wrap(title, width: max(1, width - 2)).enumerated().map { index, line in
            (index == 0 ? context.apply(.accent, to: "?") + " " : "  ") + context.apply(.heading, to: line)
        }
        let range = state.visibleRange
        let numberWidth = String(items.count).count
        if range.lowerBound > 0 {
            lines.append(context.apply(.muted, to: DisplayWidth.truncate("  ↑ \(range.lowerBound) more", toWidth: width)))
        }
        for index in range {
            let selected = index == state.selection
            let number = DisplayWidth.pad("\(index + 1)", toWidth: numberWidth, alignment: .right)
            let prefix = (selected ? "› " : "  ") + number + "  "
            let room = max(1, width - DisplayWidth.width(of: prefix))
            let item = DisplayWidth.truncate(DisplayWidth.singleLine(items[index]), toWidth: room)
            if selected {
                lines.append(context.apply(context.theme.accent.bolded(), to: prefix + item))
            } else {
                lines.append(context.apply(.muted, to: prefix) + item)
            }
        }
        if range.upperBound < items.count {
            let more = "  ↓ \(items.count - range.upperBound) more"
            lines.append(context.apply(.muted, to: DisplayWidth.truncate(more, toWidth: width)))
        }
        if !hint.isEmpty {
            lines.append(context.apply(.muted, to: DisplayWidth.truncate("  " + hint, toWidth: width)))
        }
        return lines.map { DisplayWidth.truncate($0, toWidth: width) }
    }

    /// The line left on screen after choosing: `? Title › item`.
    public func summary(of index: Int, in context: RenderContext) -> String {
        let item = items.indices.contains(index) ? DisplayWidth.singleLine(items[index]) : ""
        let line = context.apply(.accent, to: "?") + " " + context.apply(.heading, to: title) + " "
            + context.apply(.muted, to: "›") + " " + context.apply(.accent, to: item)
        return DisplayWidth.truncate(line, toWidth: context.width)
    }

    // MARK: Choosing

    /// Runs the key loop and returns the chosen index.
    ///
    /// - Throws: `PromptError.inputDisabled` when `noInput`, `.notInteractive` without a
    ///   terminal, `.noChoices` for an empty list, `.cancelled` on Esc/q, `.endOfInput`
    ///   when input ends.
    public func choose(using io: some PromptIO, context: RenderContext, noInput: Bool = false) throws -> Int {
        guard !noInput else { throw PromptError.inputDisabled(prompt: title) }
        guard io.isInteractive else { throw PromptError.notInteractive(prompt: title) }
        guard !items.isEmpty else { throw PromptError.noChoices(prompt: title) }

        return try io.withRawInput {
            var state = initialState()
            var drawnLines = 0
            // Redraw by moving up over the previous frame and clearing to the end of screen.
            func redraw() {
                let lines = render(state: state, in: context)
                let rewind = drawnLines > 0 ? "\r\u{1B}[\(drawnLines)A\u{1B}[J" : ""
                io.write(rewind + lines.joined(separator: "\n") + "\n")
                drawnLines = lines.count
            }
            func eraseFrame() {
                io.write("\r\u{1B}[\(drawnLines)A\u{1B}[J")
            }

            redraw()
            while state.outcome == nil {
                let bytes = try io.readKeyBytes()
                guard !bytes.isEmpty else {
                    eraseFrame()
                    throw PromptError.endOfInput(prompt: title)
                }
                for key in PickerState.keys(from: bytes) { state.handle(key) }
                if state.outcome == nil { redraw() }
            }
            eraseFrame()
            switch state.outcome {
            case .chosen(let index):
                io.write(summary(of: index, in: context) + "\n")
                return index
            case .cancelled, nil:
                throw PromptError.cancelled(prompt: title)
            }
        }
    }
}
