/// SIGINT or SIGTERM arrived and the work stopped at a safe point: thrown by
/// `CancellationFlag.check()` and by every layer that waits on something cancellable (a
/// transfer, a child process). Each layer removes what it left unfinished before it throws.
public struct Interruption: SourceFailure, Sendable, Equatable, CustomStringConvertible {
    /// The stop.
    public init() {}

    public var description: String {
        "Interrupted; unfinished work was removed (a backup commits nothing, a restore keeps only complete, checked files)"
    }
}
