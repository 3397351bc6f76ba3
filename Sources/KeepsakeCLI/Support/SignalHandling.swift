import BackupCore
import Foundation
import KeepsakeSupport
import TerminalUI

/// Turns SIGINT and SIGTERM into a cancellation the engine notices between blocks, so it
/// can remove its temporary files and exit 130. A second signal ends the process at once.
enum SignalHandling {
    /// The flag every command passes to the engine.
    static let cancellation = CancellationFlag()

    /// Installs the handlers (without SA_RESTART, so a blocked read returns EINTR).
    static func install() {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in
            if SignalHandling.cancellation.isCancelled {
                _exit(130)
            }
            SignalHandling.cancellation.cancel()
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(SIGINT, &action, nil)
        sigaction(SIGTERM, &action, nil)
        // A closed pipe (keepsake list | head) is not an error worth a signal death.
        ConsoleWriter.ignoreBrokenPipeSignal()
    }
}
