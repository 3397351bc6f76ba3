import KeepsakeSupport

/// An object being stored: written front to back, then committed (made visible under its
/// final name, durably) or aborted (gone without a trace).
public protocol PendingObject: ByteSink {
    /// Bytes written so far.
    var bytesWritten: Int64 { get }
    /// Makes the object durable and visible under its name, atomically.
    func commit() throws
    /// Discards everything written; safe to call after a failure or twice.
    func abort()
}
