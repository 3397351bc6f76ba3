import Foundation

/// An open folder descriptor owned by whoever holds the handle last: closed when the last
/// reference goes. The restoring thread's folder descriptors are closed as it moves on, so
/// the file writer gets its own copy (`dup`) of the folder a file goes into.
final class DirectoryHandle: Sendable {
    /// The descriptor; valid while the handle lives.
    let fd: Int32

    /// A handle on a copy of `fd`, or nil when no descriptor is left (errno says why).
    init?(copying fd: Int32) {
        let copy = dup(fd)
        guard copy >= 0 else { return nil }
        self.fd = copy
    }

    deinit { close(fd) }
}
