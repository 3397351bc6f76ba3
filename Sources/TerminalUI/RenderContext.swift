import Foundation

/// Everything a component needs to lay itself out: the width it may use, whether colour
/// is on, and the theme.
///
/// ```swift
/// let context = RenderContext(width: 80, colorEnabled: false)
/// let lines = Header(title: "Keepsake").render(in: context)
/// ```
public struct RenderContext: Sendable, Hashable {

    // MARK: Properties

    /// Maximum width of every rendered line, in terminal cells (at least 1).
    public var width: Int
    /// Whether components may emit ANSI escape sequences (styling: bold, dim, underline,
    /// and colour unless `colorsAllowed` is off).
    public var colorEnabled: Bool
    /// Whether those sequences may hold colours: `NO_COLOR` takes colours away and keeps
    /// the rest of the styling (no-color.org).
    public var colorsAllowed: Bool
    /// The styles for semantic roles.
    public var theme: Theme

    /// Creates a context. Widths below 1 are raised to 1.
    public init(width: Int = 80, colorEnabled: Bool = false, colorsAllowed: Bool = true, theme: Theme = .standard) {
        self.width = max(1, width)
        self.colorEnabled = colorEnabled
        self.colorsAllowed = colorsAllowed
        self.theme = theme
    }

    /// A context without colour, for plain greppable output and tests.
    public static func plain(width: Int = 80) -> RenderContext {
        RenderContext(width: width, colorEnabled: false)
    }

    // MARK: Deriving

    /// The same context with another width (children laid out in a narrower area).
    public func withWidth(_ width: Int) -> RenderContext {
        var copy = self
        copy.width = max(1, width)
        return copy
    }

    // MARK: Styling

    /// `text` in `style`, or unchanged when colour is off.
    public func apply(_ style: Style, to text: String) -> String {
        (colorsAllowed ? style : style.withoutColors).apply(to: text, enabled: colorEnabled)
    }

    /// `text` in the theme's style for `role`, or unchanged when colour is off.
    public func apply(_ role: Theme.Role, to text: String) -> String {
        apply(theme.style(for: role), to: text)
    }
}
