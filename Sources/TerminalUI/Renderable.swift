import Foundation

/// Anything that can draw itself as terminal lines: the common protocol of all components.
///
/// `render(in:)` returns lines without newline characters, each at most `context.width`
/// cells wide (measured with `DisplayWidth`). Components are small `Sendable` values; the
/// modifiers below are declared once here so every component gets them.
///
/// ```swift
/// let card = Box("Backup finished").padding(leading: 2).shadow()
/// print(card.renderString(in: .plain(width: 40)), terminator: "")
/// ```
public protocol Renderable: Sendable {
    /// Lines for this component laid out in `context`.
    func render(in context: RenderContext) -> [String]
}

// MARK: - Output helpers

extension Renderable {
    /// All lines joined with newlines, with a trailing newline (empty if there are no lines).
    public func renderString(in context: RenderContext) -> String {
        let lines = render(in: context)
        return lines.isEmpty ? "" : lines.joined(separator: "\n") + "\n"
    }
}

// MARK: - Modifiers

extension Renderable {
    /// Draws a drop shadow one cell to the right and one line below.
    ///
    /// The content gets one cell less width. The shadow is drawn with `character`
    /// (default "░", a light shade that reads as a shadow even without colour) and, when
    /// colour is on, in the theme's border style. Decorative: prefer it only on terminals.
    public func shadow(_ character: Character = "░") -> ShadowModifier<Self> {
        ShadowModifier(content: self, character: character)
    }

    /// Adds blank lines above and below and spaces on the left; `trailing` narrows the
    /// width available to the content without emitting trailing spaces.
    public func padding(top: Int = 0, leading: Int = 0, bottom: Int = 0, trailing: Int = 0) -> PaddingModifier<Self> {
        PaddingModifier(content: self, top: top, leading: leading, bottom: bottom, trailing: trailing)
    }

    /// The same padding on all four sides (horizontal padding counts cells).
    public func padding(_ amount: Int) -> PaddingModifier<Self> {
        padding(top: amount, leading: amount, bottom: amount, trailing: amount)
    }
}
