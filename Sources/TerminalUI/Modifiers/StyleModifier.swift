import Foundation

/// A component whose lines are drawn in a style. Created with `Renderable.styled(_:)`.
public struct StyleModifier<Content: Renderable>: Renderable {

    // MARK: Properties

    /// The styled component.
    public var content: Content
    /// The style to apply.
    public var look: Look

    /// Styles `content` with `look`.
    public init(content: Content, look: Look) {
        self.content = content
        self.look = look
    }

    // MARK: Rendering

    /// Renders the content and styles each line separately so no sequence spans lines.
    public func render(in context: RenderContext) -> [String] {
        let style = look.resolve(in: context.theme)
        return content.render(in: context).map { context.apply(style, to: $0) }
    }
}
