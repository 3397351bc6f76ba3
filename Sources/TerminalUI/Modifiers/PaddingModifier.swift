import Foundation

/// A component with blank space around it. Created with `Renderable.padding(...)`.
public struct PaddingModifier<Content: Renderable>: Renderable {

    // MARK: Properties

    /// The padded component.
    public var content: Content
    /// Blank lines above.
    public var top: Int
    /// Spaces before every line.
    public var leading: Int
    /// Blank lines below.
    public var bottom: Int
    /// Cells kept free on the right (narrows the content; no spaces are written).
    public var trailing: Int

    /// Pads `content`; negative amounts count as zero.
    public init(content: Content, top: Int = 0, leading: Int = 0, bottom: Int = 0, trailing: Int = 0) {
        self.content = content
        self.top = max(0, top)
        self.leading = max(0, leading)
        self.bottom = max(0, bottom)
        self.trailing = max(0, trailing)
    }

    // MARK: Rendering

    /// Renders the content in the remaining width and indents it.
    public func render(in context: RenderContext) -> [String] {
        // Never squeeze the content below one cell; give up leading space first.
        let leading = min(self.leading, max(0, context.width - 1))
        let inner = max(1, context.width - leading - trailing)
        let indent = DisplayWidth.spaces(leading)
        let lines = content.render(in: context.withWidth(inner)).map { line in
            line.isEmpty ? line : indent + line
        }
        return Array(repeating: "", count: top) + lines + Array(repeating: "", count: bottom)
    }
}
