import Foundation

/// How a piece of text should look: a theme role (resolved when rendering, so the theme
/// can change) or a fixed style.
public enum Look: Sendable, Hashable {
    // MARK: Cases

    /// The theme's style for a role.
    case role(Theme.Role)
    /// A fixed style, independent of the theme.
    case style(Style)

    /// No styling.
    public static let plain = Look.role(.plain)

    // MARK: Resolving

    /// The concrete style in `theme`.
    public func resolve(in theme: Theme) -> Style {
        switch self {
        case .role(let role): return theme.style(for: role)
        case .style(let style): return style
        }
    }
}
