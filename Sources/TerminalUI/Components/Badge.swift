import Foundation

/// A short status label such as FULL, INCR, OK, CORRUPT or LOCKED; the twin of a custom
/// button with a background and three font sizes.
///
/// Without colour a badge is drawn in brackets so it stays readable and greppable:
/// `[  OK  ]` (big), `[ OK ]` (medium), `[OK]` (small). With colour a filled badge
/// replaces the brackets by its background colour, and a plain badge colours the label
/// inside muted brackets. The width is the same in every mode, so tables do not shift.
///
/// ```swift
/// Badge("OK", role: .success)                                 // filled, medium
/// Badge("CORRUPT", role: .danger, emphasis: .big)
/// Badge("INCR", role: .accent, emphasis: .small, filled: false)
/// ```
public struct Badge: Renderable, Hashable {

    // MARK: Options

    /// How much room the badge takes.
    public enum Emphasis: Sendable, Hashable, CaseIterable {
        /// Two spaces around the label.
        case big
        /// One space around the label.
        case medium
        /// No space around the label.
        case small

        /// Spaces on each side of the label.
        var padding: Int {
            switch self {
            case .big: return 2
            case .medium: return 1
            case .small: return 0
            }
        }
    }

    // MARK: Properties

    /// The label text.
    public var label: String
    /// The semantic role giving the colour.
    public var role: Theme.Role
    /// The size.
    public var emphasis: Emphasis
    /// Filled (background colour or reverse video) or plain (coloured text).
    public var filled: Bool

    /// Creates a badge.
    public init(_ label: String, role: Theme.Role = .accent, emphasis: Emphasis = .medium, filled: Bool = true) {
        self.label = label
        self.role = role
        self.emphasis = emphasis
        self.filled = filled
    }

    // MARK: Rendering

    /// The badge without escape sequences, as drawn without colour: `[ OK ]`.
    public var plainText: String {
        let space = DisplayWidth.spaces(emphasis.padding)
        return "[" + space + label + space + "]"
    }

    /// The badge's width in cells, equal in every mode.
    public var width: Int { DisplayWidth.width(of: plainText) }

    /// The badge as one inline string for `context` (for use inside other text).
    public func text(in context: RenderContext) -> String {
        guard context.colorEnabled else { return plainText }
        // Without colours, a filled block would be invisible: the bracketed form, bold.
        guard context.colorsAllowed else { return context.apply(Style(bold: true), to: plainText) }
        let space = DisplayWidth.spaces(emphasis.padding)
        if filled {
            // The brackets' cells become part of the coloured block.
            let block = " " + space + label + space + " "
            return context.apply(context.theme.fill(for: role), to: block)
        }
        let bracketStyle = context.theme.muted
        let labelStyle = context.theme.style(for: role).bolded()
        return context.apply(bracketStyle, to: "[") + space + context.apply(labelStyle, to: label)
            + space + context.apply(bracketStyle, to: "]")
    }

    /// One line: the badge, its label truncated if the width is too small.
    public func render(in context: RenderContext) -> [String] {
        if width <= context.width { return [text(in: context)] }
        var smaller = self
        let overhead = width - DisplayWidth.width(of: label)
        smaller.label = DisplayWidth.truncate(label, toWidth: max(1, context.width - overhead))
        let line = smaller.text(in: context)
        return [DisplayWidth.truncate(line, toWidth: context.width)]
    }
}
