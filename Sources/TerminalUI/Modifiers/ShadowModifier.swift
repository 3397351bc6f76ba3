import Foundation

/// A component with a drop shadow one cell to the right and one line below.
/// Created with `Renderable.shadow(_:)`.
///
/// ```
/// ╭──────╮
/// │ Done │░
/// ╰──────╯░
///  ░░░░░░░░
/// ```
public struct ShadowModifier<Content: Renderable>: Renderable {

    // MARK: Properties

    /// The component casting the shadow.
    public var content: Content
    /// The glyph the shadow is drawn with.
    public var character: Character

    /// Wraps `content` with a shadow drawn in `character`.
    public init(content: Content, character: Character = "░") {
        self.content = content
        self.character = character
    }

    // MARK: Rendering

    /// Renders the content one cell narrower and adds the shadow column and row.
    public func render(in context: RenderContext) -> [String] {
        guard context.width >= 2 else { return content.render(in: context) }
        let lines = content.render(in: context.withWidth(context.width - 1))
        guard !lines.isEmpty else { return [] }
        // Shadows line up only on a rectangular block, so pad lines to the widest one.
        let blockWidth = lines.map(DisplayWidth.width(of:)).max() ?? 0
        let glyphWidth = max(1, DisplayWidth.width(of: character))
        let shade = context.apply(context.theme.border, to: String(character))
        let bottomCount = max(1, blockWidth / glyphWidth)

        var result: [String] = []
        for (index, line) in lines.enumerated() {
            let padded = DisplayWidth.pad(line, toWidth: blockWidth)
            // The first line has no shadow beside it (the light falls from the top left);
            // a space keeps the block rectangular so it can be nested.
            result.append(index == 0 ? padded + DisplayWidth.spaces(glyphWidth) : padded + shade)
        }
        let bottom = String(repeating: String(character), count: bottomCount)
        result.append(" " + context.apply(context.theme.border, to: bottom))
        return result
    }
}
