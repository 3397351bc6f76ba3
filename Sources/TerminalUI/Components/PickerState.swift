import Foundation

/// The pure state machine behind `Picker`: which item is selected, which part of the list
/// is visible, and whether the user chose or cancelled. Keys go in, state comes out, so
/// it is tested without a terminal.
///
/// ```swift
/// var state = PickerState(itemCount: 3)
/// for key in PickerState.keys(from: Array("\u{1B}[Bj\r".utf8)) { state.handle(key) }
/// state.outcome   // .chosen(2)
/// ```
public struct PickerState: Sendable, Hashable {

    // MARK: Types

    /// A decoded key press.
    public enum Key: Sendable, Hashable {
        /// Arrow up, k, Ctrl-P.
        case up
        /// Arrow down, j, Ctrl-N.
        case down
        /// Home, g.
        case home
        /// End, G.
        case end
        /// Page up.
        case pageUp
        /// Page down.
        case pageDown
        /// Enter (CR or LF).
        case enter
        /// Esc, q, Ctrl-C, Ctrl-D.
        case cancel
        /// A digit 0–9: 1–9 jump to that item.
        case digit(Int)
        /// Anything else (ignored).
        case other
    }

    /// How the picker ended.
    public enum Outcome: Sendable, Hashable {
        /// The item at this index was chosen.
        case chosen(Int)
        /// The user cancelled.
        case cancelled
    }

    // MARK: Properties

    /// Number of items.
    public let itemCount: Int
    /// Items visible at once.
    public let pageSize: Int
    /// Index of the highlighted item.
    public private(set) var selection: Int
    /// Index of the first visible item.
    public private(set) var scrollOffset: Int
    /// Set once the user chose or cancelled; later keys are ignored.
    public private(set) var outcome: Outcome?

    /// Creates the state with `selection` highlighted (clamped into range).
    public init(itemCount: Int, selection: Int = 0, pageSize: Int = 10) {
        self.itemCount = max(0, itemCount)
        self.pageSize = max(1, pageSize)
        self.selection = itemCount > 0 ? min(max(0, selection), itemCount - 1) : 0
        self.scrollOffset = 0
        self.outcome = itemCount > 0 ? nil : .cancelled
        scrollToSelection()
    }

    /// The indices currently visible.
    public var visibleRange: Range<Int> {
        scrollOffset..<min(itemCount, scrollOffset + pageSize)
    }

    // MARK: Transitions

    /// Applies one key. Up and down wrap around at the ends.
    public mutating func handle(_ key: Key) {
        guard outcome == nil, itemCount > 0 else { return }
        switch key {
        case .up: selection = selection == 0 ? itemCount - 1 : selection - 1
        case .down: selection = selection == itemCount - 1 ? 0 : selection + 1
        case .home: selection = 0
        case .end: selection = itemCount - 1
        case .pageUp: selection = max(0, selection - pageSize)
        case .pageDown: selection = min(itemCount - 1, selection + pageSize)
        case .enter: outcome = .chosen(selection)
        case .cancel: outcome = .cancelled
        case .digit(let digit):
            if digit >= 1 && digit <= itemCount { selection = digit - 1 }
        case .other: break
        }
        scrollToSelection()
    }

    private mutating func scrollToSelection() {
        if selection < scrollOffset { scrollOffset = selection }
        if selection >= scrollOffset + pageSize { scrollOffset = selection - pageSize + 1 }
        scrollOffset = max(0, min(scrollOffset, max(0, itemCount - pageSize)))
    }

    // MARK: Decoding

    /// Decodes the bytes of one or more key presses as read from a raw terminal.
    public static func keys(from bytes: [UInt8]) -> [Key] {
        var keys: [Key] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case 0x1B:
                guard index < bytes.count, bytes[index] == 0x5B || bytes[index] == 0x4F else {
                    keys.append(.cancel)  // a lone Esc
                    continue
                }
                index += 1
                // Parameters, then the final byte that names the key.
                var parameters: [UInt8] = []
                while index < bytes.count, (0x30...0x3F).contains(bytes[index]) {
                    parameters.append(bytes[index])
                    index += 1
                }
                guard index < bytes.count else {
                    keys.append(.other)
                    continue
                }
                let final = bytes[index]
                index += 1
                keys.append(decodeSequence(final: final, parameters: parameters))
            case 0x0D, 0x0A: keys.append(.enter)
            case 0x03, 0x04, UInt8(ascii: "q"): keys.append(.cancel)
            case UInt8(ascii: "k"), 0x10: keys.append(.up)
            case UInt8(ascii: "j"), 0x0E: keys.append(.down)
            case UInt8(ascii: "g"): keys.append(.home)
            case UInt8(ascii: "G"): keys.append(.end)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): keys.append(.digit(Int(byte - UInt8(ascii: "0"))))
            default: keys.append(.other)
            }
        }
        return keys
    }

    private static func decodeSequence(final: UInt8, parameters: [UInt8]) -> Key {
        switch final {
        case UInt8(ascii: "A"): return .up
        case UInt8(ascii: "B"): return .down
        case UInt8(ascii: "H"): return .home
        case UInt8(ascii: "F"): return .end
        case UInt8(ascii: "~"):
            switch String(decoding: parameters, as: UTF8.self) {
            case "1", "7": return .home
            case "4", "8": return .end
            case "5": return .pageUp
            case "6": return .pageDown
            default: return .other
            }
        default: return .other
        }
    }
}
