import Foundation
import Glibc

/// Writes text straight to a file descriptor with `write(2)`, bypassing stdio buffers so
/// progress, prompts and messages interleave in the order they were written.
///
/// Interrupted calls (`EINTR`) are retried and partial writes continued. A closed reader
/// (`EPIPE`, as in `keepsake list | head -1`) stops writing quietly; call
/// `ignoreBrokenPipeSignal()` once at start-up so the process gets `EPIPE` instead of
/// being killed by `SIGPIPE`.
///
/// ```swift
/// ConsoleWriter.standardOutput.write(table.renderString(in: context))
/// ConsoleWriter.standardError.writeLine("warning: 3 files skipped")
/// ```
public struct ConsoleWriter: TextOutput, Hashable {

    // MARK: Destinations

    /// The descriptor written to.
    public let fileDescriptor: Int32

    /// Writes to `fileDescriptor`.
    public init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    /// `fileDescriptor`.
    public var underlyingDescriptor: Int32? { fileDescriptor }

    /// File descriptor 1: data.
    public static let standardOutput = ConsoleWriter(fileDescriptor: 1)
    /// File descriptor 2: messages, progress, prompts.
    public static let standardError = ConsoleWriter(fileDescriptor: 2)

    // MARK: Writing

    /// Writes all of `text`. Returns `false` if the descriptor failed (for example the
    /// reader went away); the error is otherwise ignored, as output is best effort.
    @discardableResult
    public func write(_ text: String) -> Bool {
        var bytes = Array(text.utf8)
        guard !bytes.isEmpty else { return true }
        return bytes.withUnsafeMutableBytes { buffer -> Bool in
            guard let base = buffer.baseAddress else { return true }
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fileDescriptor, base + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                    continue
                }
                if written < 0 && (errno == EINTR || errno == EAGAIN) {
                    // EAGAIN happens on a non-blocking terminal; wait until it drains.
                    if errno == EAGAIN { waitUntilWritable() }
                    continue
                }
                return false  // EPIPE, EBADF, ENOSPC…: give up quietly
            }
            return true
        }
    }

    /// Whether the descriptor is a terminal.
    public var isTerminal: Bool { isatty(fileDescriptor) == 1 }

    private func waitUntilWritable() {
        var descriptor = pollfd(fd: fileDescriptor, events: Int16(POLLOUT), revents: 0)
        _ = poll(&descriptor, 1, 100)
    }

    // MARK: Process set-up

    /// Ignores `SIGPIPE` for the whole process, so writing to a closed pipe fails with
    /// `EPIPE` (handled above) instead of killing the process. Call once from `main`.
    public static func ignoreBrokenPipeSignal() {
        _ = signal(SIGPIPE, SIG_IGN)
    }
}
