import Foundation

/// A text style rendered as ANSI SGR ("Select Graphic Rendition") sequences.
///
/// Styles are plain values; they only emit escape sequences when asked to with
/// `enabled: true`, so the same component code produces plain text for pipes and files.
///
/// ```swift
/// let warning = Style(foreground: .yellow, bold: true)
/// warning.apply(to: "careful", enabled: context.colorEnabled)
/// ```
public struct Style: Sendable, Hashable {

    // MARK: Colours

    /// A terminal colour: one of the 16 ANSI colours or an index into the 256-colour palette.
    public enum Color: Sendable, Hashable {
        /// The eight standard colours (SGR 30–37 / 40–47).
        case black, red, green, yellow, blue, magenta, cyan, white
        /// The eight bright colours (SGR 90–97 / 100–107).
        case brightBlack, brightRed, brightGreen, brightYellow
        case brightBlue, brightMagenta, brightCyan, brightWhite
        /// An entry of the xterm 256-colour palette.
        case indexed(UInt8)

        /// SGR parameters selecting this colour as foreground or background.
        func parameters(background: Bool) -> String {
            let base = background ? 40 : 30
            let brightBase = background ? 100 : 90
            switch self {
            case .black: return "\(base + 0)"
            case .red: return "\(base + 1)"
            case .green: return "\(base + 2)"
            case .yellow: return "\(base + 3)"
            case .blue: return "\(base + 4)"
            case .magenta: return "\(base + 5)"
            case .cyan: return "\(base + 6)"
            case .white: return "\(base + 7)"
            case .brightBlack: return "\(brightBase + 0)"
            case .brightRed: return "\(brightBase + 1)"
            case .brightGreen: return "\(brightBase + 2)"
            case .brightYellow: return "\(brightBase + 3)"
            case .brightBlue: return "\(brightBase + 4)"
            case .brightMagenta: return "\(brightBase + 5)"
            case .brightCyan: return "\(brightBase + 6)"
            case .brightWhite: return "\(brightBase + 7)"
            case .indexed(let index): return background ? "48;5;\(index)" : "38;5;\(index)"
            }
        }
    }

    // MARK: Attributes

    /// Foreground (text) colour; `nil` keeps the terminal default.
    public var foreground: Color?
    /// Background colour; `nil` keeps the terminal default.
    public var background: Color?
    /// Bold / increased intensity.
    public var bold: Bool
    /// Dim / decreased intensity.
    public var dim: Bool
    /// Italic (not drawn by every terminal).
    public var italic: Bool
    /// Underlined.
    public var underline: Bool
    /// Reverse video: swaps foreground and background.
    public var reverse: Bool

    /// Creates a style; every attribute is off by default.
    public init(
        foreground: Color? = nil,
        background: Color? = nil,
        bold: Bool = false,
        dim: Bool = false,
        italic: Bool = false,
        underline: Bool = false,
        reverse: Bool = false
    ) {
        self.foreground = foreground
        self.background = background
        self.bold = bold
        self.dim = dim
        self.italic = italic
        self.underline = underline
        self.reverse = reverse
    }

    /// The style that changes nothing.
    public static let plain = Style()

    /// Whether this style would emit no escape sequence at all.
    public var isPlain: Bool { parameters.isEmpty }

    // MARK: Combining

    /// This style with the attributes of `other` added; `other`'s colours win when set.
    public func merging(_ other: Style) -> Style {
        Style(
            foreground: other.foreground ?? foreground,
            background: other.background ?? background,
            bold: bold || other.bold,
            dim: dim || other.dim,
            italic: italic || other.italic,
            underline: underline || other.underline,
            reverse: reverse || other.reverse
        )
    }

    /// The same style without its foreground and background colours (for `NO_COLOR`).
    public var withoutColors: Style {
        var copy = self
        copy.foreground = nil
        copy.background = nil
        return copy
    }

    /// A copy with bold switched on.
    public func bolded() -> Style { merging(Style(bold: true)) }

    // MARK: Rendering

    /// The SGR parameter list, for example `["1", "31"]`.
    public var parameters: [String] {
        var result: [String] = []
        if bold { result.append("1") }
        if dim { result.append("2") }
        if italic { result.append("3") }
        if underline { result.append("4") }
        if reverse { result.append("7") }
        if let foreground { result.append(foreground.parameters(background: false)) }
        if let background { result.append(background.parameters(background: true)) }
        return result
    }

    /// The escape sequence that switches this style on (empty for a plain style).
    public var openSequence: String {
        let parameters = self.parameters
        return parameters.isEmpty ? "" : "\u{1B}[" + parameters.joined(separator: ";") + "m"
    }

    /// The escape sequence that resets all attributes.
    public static let resetSequence = "\u{1B}[0m"

    /// Wraps `text` in this style's sequences when `enabled`, otherwise returns it as is.
    ///
    /// A reset inside `text` (from an inner styled part) re-opens this style after it, so
    /// styles nest the way one expects. Empty text stays empty.
    public func apply(to text: String, enabled: Bool) -> String {
        guard enabled, !text.isEmpty else { return text }
        let open = openSequence
        guard !open.isEmpty else { return text }
        let reset = Style.resetSequence
        let body = text.replacingOccurrences(of: reset, with: reset + open)
        return open + body + reset
    }
}
