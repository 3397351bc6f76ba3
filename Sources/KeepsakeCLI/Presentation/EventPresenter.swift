import BackupCore
import Foundation
import KeepsakeJSON
import KeepsakeModel
import TerminalUI

/// Shows engine events: warnings as lines on stderr, progress as a bar on a terminal (or
/// periodic plain lines on a `TERM=dumb` terminal and with `--progress`, JSON Lines with
/// `--progress --json`), nothing animated otherwise.
final class EventPresenter: EngineEventSink {
    // MARK: State

    private let context: CommandContext
    private let renderer: ProgressRenderer?
    private let jsonProgress: Bool
    private let started = Date()
    private var lastJSONLine = Date.distantPast
    /// Warnings seen, for the summary.
    private(set) var warnings: [PathWarning] = []
    /// Cautions shown: `run` takes the lock twice (backup, prune) and says each thing once.
    private var cautionsShown: Set<String> = []

    /// A presenter for one command run; `progress` is the `--progress` flag.
    init(context: CommandContext, progress: Bool) {
        self.context = context
        jsonProgress = progress && context.json
        if context.json || context.quiet && !progress {
            renderer = nil
        } else if context.capabilities.canAnimate || progress {
            renderer = ProgressRenderer(capabilities: context.capabilities, theme: context.theme,
                                        periodicPlainLines: progress ? 2 : nil, output: context.console.errors)
        } else if context.capabilities.stderrIsTTY && context.capabilities.isDumbTerminal {
            // A terminal that cannot redraw (TERM=dumb, an editor's shell): a plain line
            // every few seconds, as --progress gives, instead of a bar.
            renderer = ProgressRenderer(capabilities: context.capabilities, theme: context.theme, periodicPlainLines: 3,
                                        output: context.console.errors)
        } else {
            renderer = nil
        }
    }

    // MARK: EngineEventSink

    func handle(_ event: EngineEvent) {
        switch event {
        case .warning(let warning):
            warnings.append(warning)
            let line = "\(warning.path): \(warning.reason)"
            if let renderer {
                let line = DisplayWidth.singleLine(context.pasteable.complete(line))
                renderer.printLine(context.err.apply(.warning, to: "warning:") + " " + line)
            } else {
                context.warn(line)
            }
        case .caution(let text):
            guard cautionsShown.insert(text).inserted else { return }
            if let renderer {
                renderer.printLine(context.err.apply(.warning, to: "warning:") + " "
                    + DisplayWidth.singleLine(context.pasteable.complete(text)))
            } else {
                context.warn(text)
            }
        case .notice(let text):
            if let renderer {
                if !context.quiet { renderer.printLine(context.err.apply(.muted, to: DisplayWidth.singleLine(context.pasteable.complete(text)))) }
            } else {
                context.note(text)
            }
        case .stepFinished:
            finish()
        case .progress(let snapshot):
            let elapsed = Date().timeIntervalSince(started)
            let rate = elapsed > 0.5 ? Double(snapshot.bytesDone) / elapsed : nil
            if jsonProgress {
                guard Date().timeIntervalSince(lastJSONLine) >= 1 else { return }
                lastJSONLine = Date()
                let line = JSONValue.object(JSONObject([
                    ("event", .string("progress")),
                    ("entries", .int(snapshot.entriesDone)),
                    ("files", .int(snapshot.filesDone)),
                    ("bytes", .int(snapshot.bytesDone)),
                    ("total_bytes", snapshot.totalBytes.map { .int($0) } ?? .null),
                    ("elapsed_seconds", .double((elapsed * 10).rounded() / 10)),
                    ("path", .string(snapshot.currentPath)),
                ]))
                context.printLine(line.serialized())
                return
            }
            // The total may be an estimate (the last backup of the same sources): past it, the
            // bar stays full and the ETA goes.
            let fraction = snapshot.totalBytes.map { $0 > 0 ? min(1, Double(snapshot.bytesDone) / Double($0)) : 1 }
            let remaining = snapshot.totalBytes.map { Double(max(0, $0 - snapshot.bytesDone)) }
            let eta = rate.flatMap { rate in remaining.flatMap { rate > 0 && $0 > 0 ? $0 / rate : nil } }
            renderer?.update(ProgressBar(fraction: fraction, filesDone: Int(snapshot.filesDone), bytesDone: snapshot.bytesDone,
                                         totalBytes: snapshot.totalBytes, bytesPerSecond: rate, eta: eta,
                                         currentItem: snapshot.currentPath))
        }
    }

    /// Erases the progress line before the summary is printed.
    func finish() {
        renderer?.finish()
    }
}
