import Foundation
import Glibc

/// When to colour output, as chosen by a `--color` option.
public enum ColorMode: String, Sendable, CaseIterable {
    /// Colour when the stream is a terminal and the environment allows it.
    case auto
    /// Always colour, even into pipes and files.
    case always
    /// Never colour.
    case never
}

/// One of the three standard streams of the process.
public enum TerminalStream: Sendable, Hashable, CaseIterable {
    /// File descriptor 0.
    case standardInput
    /// File descriptor 1: data.
    case standardOutput
    /// File descriptor 2: messages, progress and prompts.
    case standardError
}

/// What the terminal around the process can do, decided once at start-up.
///
/// Follows clig.dev and no-color.org: escape sequences are off for a stream that is not a
/// TTY, when `TERM=dumb`, or with `ColorMode.never`; `NO_COLOR` set to a non-empty value
/// takes the colours away and keeps the other styling (bold, dim, underline);
/// `ColorMode.always` forces colour on. The width comes from `COLUMNS`, else the terminal
/// window, else 80.
///
/// ```swift
/// let caps = TerminalCapabilities.detect(environment: ProcessInfo.processInfo.environment)
/// let context = caps.with(colorMode: .never).renderContext(for: .standardOutput)
/// ```
public struct TerminalCapabilities: Sendable, Hashable {

    // MARK: Decisions

    /// The width used when neither `COLUMNS` nor the terminal gives one.
    public static let defaultWidth = 80

    /// Whether standard input is a terminal (prompts are possible).
    public let stdinIsTTY: Bool
    /// Whether standard output is a terminal.
    public let stdoutIsTTY: Bool
    /// Whether standard error is a terminal.
    public let stderrIsTTY: Bool
    /// Whether to colour what is written to standard output.
    public private(set) var stdoutColor: Bool
    /// Whether to colour what is written to standard error.
    public private(set) var stderrColor: Bool
    /// Usable width in terminal cells (at least 1).
    public let width: Int
    /// Whether `TERM=dumb`: the terminal cannot move the cursor, so no redrawing.
    public let isDumbTerminal: Bool
    /// Whether styled output may hold colours (`NO_COLOR` unset, or `ColorMode.always`).
    public private(set) var colorsAllowed: Bool
    /// The colour mode the decisions were made with.
    public private(set) var colorMode: ColorMode
    /// Whether `NO_COLOR` asked for no colours (kept to decide again for another mode).
    private let noColorRequested: Bool

    // MARK: Initializers

    /// Decides from explicit inputs; pure, so tests can cover every combination.
    ///
    /// - Parameters:
    ///   - environment: the process environment (`NO_COLOR`, `TERM`, `COLUMNS` are read).
    ///   - stdinIsTTY / stdoutIsTTY / stderrIsTTY: whether each stream is a terminal.
    ///   - colorMode: the user's `--color` choice.
    ///   - measuredWidth: the terminal window's width in columns, if it could be measured.
    public init(
        environment: [String: String],
        stdinIsTTY: Bool,
        stdoutIsTTY: Bool,
        stderrIsTTY: Bool,
        colorMode: ColorMode = .auto,
        measuredWidth: Int? = nil
    ) {
        self.stdinIsTTY = stdinIsTTY
        self.stdoutIsTTY = stdoutIsTTY
        self.stderrIsTTY = stderrIsTTY
        self.colorMode = colorMode

        let term = environment["TERM"] ?? ""
        let dumb = term == "dumb"
        self.isDumbTerminal = dumb
        // no-color.org: "present and not an empty string".
        let noColor = !(environment["NO_COLOR"] ?? "").isEmpty
        self.noColorRequested = noColor
        self.colorsAllowed = colorMode == .always || !noColor
        self.stdoutColor = Self.styles(colorMode, isTTY: stdoutIsTTY, dumb: dumb)
        self.stderrColor = Self.styles(colorMode, isTTY: stderrIsTTY, dumb: dumb)

        if let columns = environment["COLUMNS"].flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }),
           columns > 0 {
            self.width = columns
        } else if let measuredWidth, measuredWidth > 0 {
            self.width = measuredWidth
        } else {
            self.width = Self.defaultWidth
        }
    }

    /// Reads the real process: `isatty` on fds 0–2, the window size of the first terminal
    /// among stdout, stderr and stdin, and the given environment.
    public static func detect(colorMode: ColorMode = .auto, environment: [String: String]) -> TerminalCapabilities {
        TerminalCapabilities(
            environment: environment,
            stdinIsTTY: isatty(0) == 1,
            stdoutIsTTY: isatty(1) == 1,
            stderrIsTTY: isatty(2) == 1,
            colorMode: colorMode,
            measuredWidth: measureWindowWidth()
        )
    }

    /// Capabilities for output that is never a terminal: no colour, no prompts, width 80
    /// (or `width`). Handy for tests and for rendering into files.
    public static func plain(width: Int = defaultWidth) -> TerminalCapabilities {
        TerminalCapabilities(
            environment: ["COLUMNS": String(width)],
            stdinIsTTY: false, stdoutIsTTY: false, stderrIsTTY: false,
            colorMode: .never
        )
    }

    /// The window width in columns from `TIOCGWINSZ` on the first of stdout, stderr and
    /// stdin that is a terminal, or `nil`.
    static func measureWindowWidth() -> Int? {
        for fd: Int32 in [1, 2, 0] where isatty(fd) == 1 {
            var size = winsize()
            if ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 {
                return Int(size.ws_col)
            }
        }
        return nil
    }

    // MARK: Deciding again

    /// The same terminal with the user's `--color` choice: only the styling decisions change.
    public func with(colorMode mode: ColorMode) -> TerminalCapabilities {
        var copy = self
        copy.colorMode = mode
        copy.colorsAllowed = mode == .always || !noColorRequested
        copy.stdoutColor = Self.styles(mode, isTTY: stdoutIsTTY, dumb: isDumbTerminal)
        copy.stderrColor = Self.styles(mode, isTTY: stderrIsTTY, dumb: isDumbTerminal)
        return copy
    }

    /// Whether a stream gets escape sequences under `mode`.
    private static func styles(_ mode: ColorMode, isTTY: Bool, dumb: Bool) -> Bool {
        switch mode {
        case .always: return true
        case .never: return false
        case .auto: return isTTY && !dumb
        }
    }

    // MARK: Per stream

    /// Whether to colour text written to `stream` (always `false` for standard input).
    public func colorEnabled(for stream: TerminalStream) -> Bool {
        switch stream {
        case .standardInput: return false
        case .standardOutput: return stdoutColor
        case .standardError: return stderrColor
        }
    }

    /// Whether prompts may be shown: standard input and standard error are terminals.
    public var canPrompt: Bool { stdinIsTTY && stderrIsTTY }

    /// Whether progress may be animated in place: standard error is a capable terminal.
    public var canAnimate: Bool { stderrIsTTY && !isDumbTerminal }

    /// A render context for text written to `stream`.
    public func renderContext(for stream: TerminalStream = .standardOutput, theme: Theme = .standard) -> RenderContext {
        RenderContext(width: width, colorEnabled: colorEnabled(for: stream), colorsAllowed: colorsAllowed, theme: theme)
    }
}
