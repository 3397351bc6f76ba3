import Synchronization

/// What was worked out from a destination's objects, kept while its backend lives (one
/// command): objects are write-once, so a value read from an object of the size a listing
/// shows still holds. A backend forgets an object's value when it writes, deletes or moves it.
///
/// `keepsake run` lists the destination's backups in each step (backup, prune, verify,
/// copy); with the memo each manifest's summary is fetched and parsed once, not once a
/// step (on S3, one GET per backup per step).
public final class ObjectMemo: Sendable {
    // MARK: State

    /// One remembered value and the size of the object it came from.
    private struct Entry: Sendable {
        var size: Int64
        var value: any Sendable
    }

    private let entries = Mutex<[String: Entry]>([:])

    /// An empty memo.
    public init() {}

    // MARK: Using

    /// The value remembered for `name` at `size`, or what `work` makes of it (remembered
    /// when it succeeds; `work` runs outside the lock). A value of another type, or from an
    /// object of another size, is worked out again.
    public func value<Value: Sendable>(of name: String, size: Int64, _ work: () throws -> Value) rethrows -> Value {
        let known = entries.withLock { entries -> Value? in
            guard let entry = entries[name], entry.size == size else { return nil }
            return entry.value as? Value
        }
        if let known { return known }
        let value = try work()
        entries.withLock { $0[name] = Entry(size: size, value: value) }
        return value
    }

    /// Forgets what was remembered for `name` (deleted, moved, or replaced).
    public func forget(_ name: String) {
        _ = entries.withLock { $0.removeValue(forKey: name) }
    }
}
