import Foundation
import Glibc

/// A temporary terminal input mode, restored on every way out: normal return, thrown
/// error, and `SIGINT`/`SIGTERM`/`SIGHUP`/`SIGQUIT` (a handler restores the saved
/// settings, then re-raises the signal with its default action so the process still
/// ends the way the user asked).
///
/// ```swift
/// let password = try TerminalMode.noEcho.run(on: 0) { readMyLine() }
/// ```
enum TerminalMode: Sendable, Hashable {
    /// Line editing stays on, typed characters are not shown (secrets). The final
    /// newline is still echoed.
    case noEcho
    /// Keys arrive one by one without echo (pickers). Ctrl-C still raises `SIGINT`.
    case raw

    // MARK: Running

    /// Switches `fileDescriptor` to this mode, runs `body`, and restores the previous
    /// settings. Throws `PromptError.terminalUnavailable` when the descriptor is not a
    /// terminal. Not re-entrant: one mode change at a time per process.
    func run<T>(on fileDescriptor: Int32 = 0, _ body: () throws -> T) throws -> T {
        var original = termios()
        guard tcgetattr(fileDescriptor, &original) == 0 else {
            throw PromptError.terminalUnavailable(reason: String(cString: strerror(errno)))
        }
        var changed = original
        switch self {
        case .noEcho:
            changed.c_lflag &= ~tcflag_t(ECHO)
            changed.c_lflag |= tcflag_t(ECHONL)
        case .raw:
            changed.c_lflag &= ~tcflag_t(ICANON | ECHO | IEXTEN)
            // Keep ISIG: Ctrl-C must still interrupt. Stop CR→NL and XON/XOFF mapping.
            changed.c_iflag &= ~tcflag_t(ICRNL | IXON)
            withUnsafeMutableBytes(of: &changed.c_cc) { controlChars in
                controlChars[Int(VMIN)] = 1
                controlChars[Int(VTIME)] = 0
            }
        }

        TerminalRestore.install(fileDescriptor: fileDescriptor, attributes: original)
        defer { TerminalRestore.restoreAndUninstall() }
        // TCSAFLUSH drops type-ahead, so a password is never read from earlier keystrokes.
        guard tcsetattr(fileDescriptor, self == .noEcho ? TCSAFLUSH : TCSANOW, &changed) == 0 else {
            throw PromptError.terminalUnavailable(reason: String(cString: strerror(errno)))
        }
        return try body()
    }
}

// MARK: - Signal-safe restore

/// The saved terminal settings and the signal handlers that put them back.
///
/// Signal handlers cannot capture context, so the saved state lives in globals; they are
/// `nonisolated(unsafe)` because only `TerminalMode.run` (one at a time) writes them and
/// the handler only reads them.
private enum TerminalRestore {
    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    static func install(fileDescriptor: Int32, attributes: termios) {
        savedDescriptor = fileDescriptor
        savedAttributes.pointee = attributes
        isActive = true
        previousActions = signals.map { signalNumber in
            var action = sigaction()
            action.__sigaction_handler.sa_handler = restoreTerminalThenReraise
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0
            var previous = sigaction()
            sigaction(signalNumber, &action, &previous)
            return previous
        }
    }

    static func restoreAndUninstall() {
        if isActive {
            _ = tcsetattr(savedDescriptor, TCSANOW, savedAttributes)
        }
        isActive = false
        for (signalNumber, previous) in zip(signals, previousActions) {
            var old = previous
            sigaction(signalNumber, &old, nil)
        }
        previousActions = []
    }
}

nonisolated(unsafe) private var savedDescriptor: Int32 = 0
/// Heap storage of the full size of `termios`: Swift 6.3 emits a constant-initialised global
/// `termios` 3 bytes short of the struct (57 of 60 bytes), so every store into such a global
/// wrote past its end (found by AddressSanitizer).
nonisolated(unsafe) private let savedAttributes: UnsafeMutablePointer<termios> = {
    let storage = UnsafeMutablePointer<termios>.allocate(capacity: 1)
    storage.initialize(to: termios())
    return storage
}()
nonisolated(unsafe) private var isActive = false
nonisolated(unsafe) private var previousActions: [sigaction] = []

/// Runs inside a signal handler: only async-signal-safe calls (tcsetattr, write,
/// signal, raise).
private func restoreTerminalThenReraise(_ signalNumber: Int32) {
    if isActive {
        _ = tcsetattr(savedDescriptor, TCSANOW, savedAttributes)
        // Leave the shell prompt on a fresh line.
        var newline: UInt8 = 0x0A
        _ = write(2, &newline, 1)
    }
    signal(signalNumber, SIG_DFL)
    raise(signalNumber)
}
