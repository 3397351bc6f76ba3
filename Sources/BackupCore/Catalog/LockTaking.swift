import Foundation
import KeepsakeStorage
import KeepsakeSupport

/// How the engine takes a destination's lock and tells about it: storage only holds the lock
/// and its facts (who held it before, what is wrong with the destination); the words for the
/// person, as the engine's events, are said here, so storage never takes an engine type.
extension WritableStorage {
    /// Takes the lock as `acquireLock` does, but when another run holds it, waits for it up
    /// to `wait` seconds, looking again every few seconds: hosts sharing a destination take
    /// turns instead of failing. Throws `LockError.held` once the wait is over, and
    /// `Interruption` when `cancellation` is set meanwhile.
    public func acquireLock(_ owner: LockOwner, waitingUpTo wait: TimeInterval,
                            cancellation: CancellationFlag?, events: EngineEventSink?) throws -> DestinationLock {
        let deadline = Date().addingTimeInterval(max(0, wait))
        var told = false
        while true {
            do {
                return try acquireLock(owner)
            } catch LockError.held(let holder, let destination) {
                guard Date() < deadline else { throw LockError.held(by: holder, destination: destination) }
                if !told {
                    told = true
                    events?.handle(.notice("\(destination) is locked by \(holder.operation) pid \(holder.pid) on \(holder.host); "
                        + "waiting for it (up to \(Int(wait)) s)"))
                }
                // A few seconds, with jitter, so the hosts that wait do not all look at once.
                let pause = min(deadline.timeIntervalSinceNow, Double.random(in: 2...5))
                let until = Date().addingTimeInterval(max(0, pause))
                while Date() < until {
                    try cancellation?.check()
                    usleep(50_000)
                }
            }
        }
    }
}

extension DestinationLock {
    /// Tells `events` about a stale lock taken over and about the destination's warnings
    /// (as cautions: they do not make the run fail).
    public func report(to events: EngineEventSink?) {
        if let previous = tookOverFrom {
            events?.handle(.caution("took over a stale lock left by pid \(previous.pid) on \(previous.host) "
                + "(started \(Timestamp.iso8601(previous.started)))"))
        }
        for warning in warnings { events?.handle(.caution(warning)) }
    }
}
