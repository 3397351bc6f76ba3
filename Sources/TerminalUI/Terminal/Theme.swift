import Foundation

/// The shared look of all components: one style per semantic role.
///
/// Components ask the theme for a role ("this is a warning") instead of hard-coding
/// colours, so a whole program changes look in one place, the twin of a gradient layer
/// shared by every screen.
///
/// ```swift
/// let context = RenderContext(width: 80, colorEnabled: true, theme: .standard)
/// context.theme.style(for: .success)   // green
/// ```
public struct Theme: Sendable, Hashable {

    // MARK: Roles

    /// A semantic role a piece of text can play.
    public enum Role: String, Sendable, Hashable, CaseIterable {
        /// No styling.
        case plain
        /// Highlights and interactive focus.
        case accent
        /// Secondary information: subtitles, labels, hints.
        case muted
        /// Good outcomes.
        case success
        /// Attention needed but not failed.
        case warning
        /// Failures and destructive actions.
        case danger
        /// Titles.
        case heading
        /// Important words inside text, such as commands in hints.
        case emphasis
    }

    // MARK: Styles

    /// Style for `.accent`.
    public var accent: Style
    /// Style for `.muted`.
    public var muted: Style
    /// Style for `.success`.
    public var success: Style
    /// Style for `.warning`.
    public var warning: Style
    /// Style for `.danger`.
    public var danger: Style
    /// Style for `.heading`.
    public var heading: Style
    /// Style for `.emphasis`.
    public var emphasis: Style
    /// Style for box borders, table rules and shadows.
    public var border: Style

    /// Creates a theme from one style per role.
    public init(
        accent: Style,
        muted: Style,
        success: Style,
        warning: Style,
        danger: Style,
        heading: Style,
        emphasis: Style,
        border: Style
    ) {
        self.accent = accent
        self.muted = muted
        self.success = success
        self.warning = warning
        self.danger = danger
        self.heading = heading
        self.emphasis = emphasis
        self.border = border
    }

    /// The default theme, using only the 16 ANSI colours so it follows the user's palette.
    public static let standard = Theme(
        accent: Style(foreground: .cyan),
        muted: Style(dim: true),
        success: Style(foreground: .green),
        warning: Style(foreground: .yellow),
        danger: Style(foreground: .red),
        heading: Style(bold: true),
        emphasis: Style(bold: true),
        border: Style(dim: true)
    )

    // MARK: Lookup

    /// The style for `role`.
    public func style(for role: Role) -> Style {
        switch role {
        case .plain: return .plain
        case .accent: return accent
        case .muted: return muted
        case .success: return success
        case .warning: return warning
        case .danger: return danger
        case .heading: return heading
        case .emphasis: return emphasis
        }
    }

    /// A filled (badge-like) style for `role`: the role's colour as background with dark
    /// bold text, or reverse video when the role has no colour.
    public func fill(for role: Role) -> Style {
        let base = style(for: role)
        if let colour = base.foreground {
            return Style(foreground: .black, background: colour, bold: true)
        }
        return Style(bold: true, reverse: true)
    }
}
