import Foundation

/// One line of progress: bar, percentage, files, bytes, rate, time left and the current
/// item, laid out to fit the width.
///
/// Parts that do not fit are dropped in this order: rate, file count, time left, bytes,
/// bar; the current item gets the room that is left and is truncated in the middle.
/// With an unknown fraction the bar shows a moving block (advance `tick` to animate it).
///
/// ```swift
/// ProgressBar(fraction: 0.42, filesDone: 1234, bytesDone: 1 << 30, totalBytes: 3 << 30,
///             bytesPerSecond: 45e6, eta: 42, currentItem: "/home/me/Photos/IMG_0001.jpg")
/// // at width 120:
/// // ████████████▌░░░░░░░░░░░░░░░░░   42%  1.0 GiB / 3.0 GiB  1,234 files  42.9 MiB/s  ETA 0:42  /home/me/Photos/IMG_0001.jpg
/// ```
public struct ProgressBar: Renderable {

    // MARK: Properties

    /// Completed fraction 0...1, or `nil` when the total is unknown.
    public var fraction: Double?
    /// Items finished so far.
    public var filesDone: Int
    /// Bytes processed so far.
    public var bytesDone: Int64
    /// Total bytes, if known.
    public var totalBytes: Int64?
    /// Current throughput, if known.
    public var bytesPerSecond: Double?
    /// Estimated seconds left, if known.
    public var eta: Double?
    /// What is being worked on now, such as a path.
    public var currentItem: String?
    /// Animation step for the unknown-fraction bar.
    public var tick: Int

    /// Creates a progress snapshot; fractions outside 0...1 are clamped, NaN means unknown.
    public init(
        fraction: Double? = nil,
        filesDone: Int = 0,
        bytesDone: Int64 = 0,
        totalBytes: Int64? = nil,
        bytesPerSecond: Double? = nil,
        eta: Double? = nil,
        currentItem: String? = nil,
        tick: Int = 0
    ) {
        self.fraction = fraction.flatMap { $0.isNaN ? nil : min(1, max(0, $0)) }
        self.filesDone = filesDone
        self.bytesDone = bytesDone
        self.totalBytes = totalBytes
        self.bytesPerSecond = bytesPerSecond
        self.eta = eta
        self.currentItem = currentItem
        self.tick = tick
    }

    // MARK: Parts

    private enum Part: CaseIterable {
        case bar, percent, bytes, files, rate, eta
    }

    /// Drop order when space runs out: first entry goes first.
    private static let dropOrder: [Part] = [.rate, .files, .eta, .bytes, .bar]

    /// The smallest width the current item may be shown in; below it, it is left out.
    static let minimumItemWidth = 12

    private func text(for part: Part) -> String? {
        switch part {
        case .bar:
            return nil  // drawn separately because it is styled in two colours
        case .percent:
            guard let fraction else { return nil }
            return DisplayWidth.pad("\(Int((fraction * 100).rounded(.down)))%", toWidth: 4, alignment: .right)
        case .bytes:
            if let totalBytes { return Units.bytes(bytesDone) + " / " + Units.bytes(totalBytes) }
            return Units.bytes(bytesDone)
        case .files:
            return Units.count(filesDone) + (filesDone == 1 ? " file" : " files")
        case .rate:
            return bytesPerSecond.map { Units.rate(bytesPerSecond: $0) }
        case .eta:
            return eta.map { "ETA " + Units.duration($0) }
        }
    }

    /// The bar's width for a line of `width` cells.
    static func barWidth(for width: Int) -> Int {
        min(30, max(10, width / 4))
    }

    // MARK: Rendering

    /// The progress line without bar, colour or truncation, for logs:
    /// `42%  1.0 GiB / 3.0 GiB  1,234 files  42.9 MiB/s  ETA 0:42  /home/me/IMG_0001.jpg`.
    public func plainLine() -> String {
        var parts = [Part.percent, .bytes, .files, .rate, .eta].compactMap { text(for: $0) }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        if let currentItem, !currentItem.isEmpty { parts.append(DisplayWidth.singleLine(currentItem)) }
        return parts.joined(separator: "  ")
    }

    /// The single line for `context.width`.
    public func line(in context: RenderContext) -> String {
        let width = context.width
        var shown = Set(Part.allCases)
        let item = currentItem.map(DisplayWidth.singleLine) ?? ""
        let barWidth = Self.barWidth(for: width)

        func fixedWidth() -> Int {
            var parts = Part.allCases.filter { shown.contains($0) && $0 != .bar }.compactMap { text(for: $0) }
                .map(DisplayWidth.width(of:))
            if shown.contains(.bar) { parts.append(barWidth) }
            return parts.reduce(0, +) + 2 * max(0, parts.count - 1)
        }
        let itemNeed = item.isEmpty ? 0 : min(Self.minimumItemWidth, DisplayWidth.width(of: item)) + 2
        for part in Self.dropOrder where fixedWidth() + itemNeed > width {
            shown.remove(part)
        }

        var pieces: [String] = []
        if shown.contains(.bar) { pieces.append(bar(width: barWidth, in: context)) }
        for part in [Part.percent, .bytes, .files, .rate, .eta] where shown.contains(part) {
            if let text = text(for: part) {
                pieces.append(part == .percent ? context.apply(.emphasis, to: text) : text)
            }
        }
        let fixed = fixedWidth()
        let room = width - fixed - (pieces.isEmpty ? 0 : 2)
        if !item.isEmpty && room >= min(Self.minimumItemWidth, DisplayWidth.width(of: item)) {
            let cut = DisplayWidth.truncate(item, toWidth: room, position: .middle)
            pieces.append(context.apply(.muted, to: cut))
        }
        return DisplayWidth.truncate(pieces.joined(separator: "  "), toWidth: width)
    }

    /// One line, see `line(in:)`.
    public func render(in context: RenderContext) -> [String] {
        [line(in: context)]
    }

    /// The bar: filled cells with eighth-block precision, or a moving block when unknown.
    private func bar(width: Int, in context: RenderContext) -> String {
        let filledStyle = context.theme.accent
        let emptyStyle = context.theme.border
        guard let fraction else {
            // A three-cell block bouncing back and forth.
            let block = min(3, width)
            let travel = max(1, width - block)
            let step = tick % (2 * travel)
            let start = step <= travel ? step : 2 * travel - step
            let before = String(repeating: "░", count: start)
            let after = String(repeating: "░", count: width - block - start)
            return context.apply(emptyStyle, to: before)
                + context.apply(filledStyle, to: String(repeating: "█", count: block))
                + context.apply(emptyStyle, to: after)
        }
        let eighths = Int((fraction * Double(width * 8)).rounded(.down))
        let full = eighths / 8
        let partials = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"]
        let partial = full < width ? partials[eighths % 8] : ""
        let used = full + (partial.isEmpty ? 0 : 1)
        let filled = String(repeating: "█", count: full) + partial
        return context.apply(filledStyle, to: filled)
            + context.apply(emptyStyle, to: String(repeating: "░", count: width - used))
    }
}
