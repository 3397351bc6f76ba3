import Foundation

/// A component laid out in a fixed width. Created with `Renderable.frame(width:alignment:)`.
public struct FrameModifier<Content: Renderable>: Renderable {

    // MARK: Properties

    /// The framed component.
    public var content: Content
    /// The requested width in cells (capped by the context width).
    public var width: Int
    /// Where each line sits inside the frame.
    public var alignment: DisplayWidth.Alignment

    /// Frames `content` in `width` cells.
    public init(content: Content, width: Int, alignment: DisplayWidth.Alignment = .left) {
        self.content = content
        self.width = width
        self.alignment = alignment
    }

    // MARK: Rendering

    /// Renders the content at the frame width and pads every line to exactly that width.
    public func render(in context: RenderContext) -> [String] {
        let frameWidth = max(1, min(width, context.width))
        return content.render(in: context.withWidth(frameWidth)).map { line in
            DisplayWidth.pad(DisplayWidth.truncate(line, toWidth: frameWidth), toWidth: frameWidth, alignment: alignment)
        }
    }
}
