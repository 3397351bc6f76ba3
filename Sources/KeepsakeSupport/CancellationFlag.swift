import Synchronization

/// Set from a signal handler (SIGINT, SIGTERM); the engine checks it between blocks and
/// stops cleanly, removing its temporary files.
public final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    /// A flag that is not set.
    public init() {}

    /// Asks the run to stop.
    public func cancel() { flag.store(true, ordering: .relaxed) }

    /// Whether a stop was asked for.
    public var isCancelled: Bool { flag.load(ordering: .relaxed) }

    /// Throws `Interruption` when a stop was asked for.
    public func check() throws {
        if isCancelled { throw Interruption() }
    }
}
