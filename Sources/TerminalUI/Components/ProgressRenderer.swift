import Foundation
import Glibc

/// Draws a `ProgressBar` in place on a terminal, safely from any thread.
///
/// On a TTY each redraw is carriage return + erase line (`\r\u{1B}[2K`) + the bar, at
/// most once per `minimumInterval` (0.1 s: ten frames a second); `finish` erases the
/// bar. When not on a TTY nothing is drawn, unless `periodicPlainLines` is set: then a
/// plain progress line is written every that many seconds, which suits logs and cron.
/// Output goes through an injected writer (standard error, as a rule).
///
/// ```swift
/// let progress = ProgressRenderer(capabilities: caps, output: ConsoleWriter.standardError)
/// progress.update(ProgressBar(fraction: 0.5, filesDone: 10, currentItem: path))
/// progress.printLine("warning: cannot read /etc/shadow")   // appears above the bar
/// progress.finish()
/// ```
///
/// `@unchecked Sendable`: all mutable state is guarded by `lock` (Glibc/Foundation only,
/// so no `Synchronization.Mutex`). The writer is called while the lock is held so lines
/// never interleave; it must not call back into the renderer.
public final class ProgressRenderer: @unchecked Sendable {

    // MARK: Types

    /// Receives every piece of output.
    public typealias Writer = @Sendable (String) -> Void
    /// Returns monotonic seconds.
    public typealias Clock = @Sendable () -> Double

    /// Moves to column 0 and erases the line.
    public static let eraseLine = "\r\u{1B}[2K"

    private struct State {
        var lastDraw: Double?
        var lastPlainLine: Double
        var isBarVisible = false
        var latest: ProgressBar?
        var tick = 0
        var isFinished = false
    }

    // MARK: Configuration

    /// Whether to draw in place (the stream is a capable terminal).
    public let isTTY: Bool
    /// Width, colour and theme of the bar.
    public let context: RenderContext
    /// Minimum seconds between two redraws on a TTY.
    public let minimumInterval: Double
    /// When not on a TTY: seconds between plain progress lines, or `nil` for silence.
    public let periodicPlainLines: Double?

    private let writer: Writer
    private let clock: Clock
    private let lock = NSLock()
    private var state: State

    // MARK: Initializers

    /// Creates a renderer from explicit settings (the form tests use).
    public init(
        isTTY: Bool,
        context: RenderContext,
        minimumInterval: Double = 0.1,
        periodicPlainLines: Double? = nil,
        clock: @escaping Clock = ProgressRenderer.monotonicSeconds,
        writer: @escaping Writer
    ) {
        self.isTTY = isTTY
        self.context = context
        self.minimumInterval = max(0, minimumInterval)
        self.periodicPlainLines = periodicPlainLines.flatMap { $0 > 0 ? $0 : nil }
        self.clock = clock
        self.writer = writer
        self.state = State(lastPlainLine: clock())
    }

    /// Creates a renderer for standard error (`output`) as the terminal allows: animated
    /// only when standard error is a capable TTY, coloured as decided for standard error.
    public convenience init(
        capabilities: TerminalCapabilities,
        theme: Theme = .standard,
        periodicPlainLines: Double? = nil,
        output: any TextOutput
    ) {
        self.init(
            isTTY: capabilities.canAnimate,
            context: capabilities.renderContext(for: .standardError, theme: theme),
            periodicPlainLines: periodicPlainLines,
            writer: { output.write($0) }
        )
    }

    // MARK: Updating

    /// Shows `progress`: redraws if the last frame is old enough, otherwise keeps it for
    /// the next frame. Ignored after `finish`.
    public func update(_ progress: ProgressBar) {
        lock.lock()
        defer { lock.unlock() }
        guard !state.isFinished else { return }
        state.latest = progress
        let now = clock()
        if isTTY {
            if let last = state.lastDraw, now - last < minimumInterval { return }
            drawLocked(now: now)
        } else if let period = periodicPlainLines, now - state.lastPlainLine >= period {
            state.lastPlainLine = now
            writer(progress.plainLine() + "\n")
        }
    }

    /// Writes a message line above the bar (for warnings during progress) and redraws
    /// the bar below it. Without a TTY the message is just written.
    public func printLine(_ message: String) {
        lock.lock()
        defer { lock.unlock() }
        let wasVisible = state.isBarVisible
        writer((wasVisible ? Self.eraseLine : "") + message + "\n")
        state.isBarVisible = false
        if wasVisible && !state.isFinished {
            drawLocked(now: clock())
        }
    }

    /// Erases the bar, optionally writes a final message line, and stops drawing.
    public func finish(message: String? = nil) {
        lock.lock()
        defer { lock.unlock() }
        guard !state.isFinished else { return }
        state.isFinished = true
        eraseLocked()
        if let message { writer(message + "\n") }
    }

    // MARK: Drawing (lock held)

    private func drawLocked(now: Double) {
        guard var bar = state.latest else { return }
        bar.tick = state.tick
        state.tick += 1
        // One cell short of the edge: writing the last column makes some terminals wrap.
        let line = bar.line(in: context.withWidth(max(1, context.width - 1)))
        writer(Self.eraseLine + line)
        state.isBarVisible = true
        state.lastDraw = now
    }

    private func eraseLocked() {
        guard state.isBarVisible else { return }
        writer(Self.eraseLine)
        state.isBarVisible = false
    }

    // MARK: Clock

    /// Seconds from `CLOCK_MONOTONIC`, unaffected by changes of the wall clock.
    public static let monotonicSeconds: Clock = {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1_000_000_000
    }
}
