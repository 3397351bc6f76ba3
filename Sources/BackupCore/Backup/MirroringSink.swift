import KeepsakeStorage
import KeepsakeSupport

/// Writes to a sink and, as far as it goes, to a second one: a failure of the mirror (a
/// cache on a full disk) stops the mirror only, never the write that matters.
final class MirroringSink: ByteSink {
    private let primary: ByteSink
    private var mirror: PendingObject?
    /// True once the mirror has failed (and been aborted).
    private(set) var mirrorFailed = false

    init(primary: ByteSink, mirror: PendingObject?) {
        self.primary = primary
        self.mirror = mirror
    }

    func write(_ buffer: UnsafeRawBufferPointer) throws {
        try primary.write(buffer)
        guard let mirror else { return }
        do {
            try mirror.write(buffer)
        } catch {
            mirror.abort()
            self.mirror = nil
            mirrorFailed = true
        }
    }

    /// Commits the mirror; false when it failed at any point.
    func commitMirror() -> Bool {
        guard let mirror else { return false }
        self.mirror = nil
        do {
            try mirror.commit()
            return true
        } catch {
            mirror.abort()
            return false
        }
    }

    /// Drops the mirror (the primary write failed).
    func abortMirror() {
        mirror?.abort()
        mirror = nil
    }
}
