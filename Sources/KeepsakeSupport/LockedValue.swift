import Foundation

/// A value shared between threads, read and changed under a lock.
///
/// Used instead of `Synchronization.Mutex`: on Linux a contended `Mutex` is taken and
/// released inside the kernel (priority-inheriting futexes), where ThreadSanitizer cannot
/// see it, so the accesses it orders were reported as data races. This lock is a
/// `pthread_mutex_t`, whose ordering the sanitizer knows.
public final class LockedValue<Value>: @unchecked Sendable {
    // MARK: State

    private let lock = NSLock()
    private var value: Value

    // MARK: API

    /// A lock holding `value`.
    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value, holding the lock; what `body` returns is returned.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
