import Foundation
import KeepsakeStorage
import KeepsakeSupport

/// An anonymous temporary file (unlinked as soon as it is opened, so a crash leaves
/// nothing behind): written front to back, then read back from the start.
final class SpoolFile: ByteSink {
    // MARK: State

    private let fd: Int32
    private var buffer: [UInt8] = []
    private let bufferCapacity = 1 << 20
    /// Bytes appended so far.
    private(set) var size: Int64 = 0

    // MARK: Life cycle

    /// Creates the file in `TMPDIR` (or /tmp).
    init() throws {
        let directory = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        // A file with no name at all where the file system allows it (O_TMPFILE): with a
        // name, a kill -9 between creating and unlinking it would leave it behind.
        let unnamed = open(directory, SpoolFile.temporaryFileFlag | O_RDWR | O_CLOEXEC, 0o600)
        if unnamed >= 0 {
            fd = unnamed
            buffer.reserveCapacity(bufferCapacity)
            return
        }
        var template = Array((directory + "/keepsake-spool-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return -1 }
            return mkstemp(base)
        }
        guard fd >= 0 else {
            throw StorageError.io(name: directory, operation: "create a temporary file in", reason: FileDescriptorIO.message(errno))
        }
        template.withUnsafeBufferPointer { buffer in
            if let base = buffer.baseAddress { unlink(base) }
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        self.fd = fd
        buffer.reserveCapacity(bufferCapacity)
    }

    deinit { close(fd) }

    /// Bytes free, for an unprivileged writer, in the file system the spool lives in (now;
    /// 0 when it cannot be told).
    var room: Int64 {
        var info = statvfs()
        guard fstatvfs(fd, &info) == 0 else { return 0 }
        let (bytes, overflow) = Int64(clamping: info.f_bavail).multipliedReportingOverflow(by: Int64(clamping: info.f_frsize))
        return overflow ? .max : bytes
    }

    /// Linux's O_TMPFILE (`__O_TMPFILE | O_DIRECTORY`; Swift's Glibc does not export it).
    private static let temporaryFileFlag: Int32 = 0o20000000 | O_DIRECTORY

    // MARK: Writing

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        size += Int64(bytes.count)
        if buffer.count + bytes.count > bufferCapacity { try flush() }
        if bytes.count >= bufferCapacity {
            try check(FileDescriptorIO.writeAll(fd, bytes))
        } else {
            buffer.append(contentsOf: bytes)
        }
    }

    /// Appends bytes.
    func append(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    /// Writes out what is buffered.
    func flush() throws {
        guard !buffer.isEmpty else { return }
        let code = buffer.withUnsafeBytes { FileDescriptorIO.writeAll(fd, $0) }
        buffer.removeAll(keepingCapacity: true)
        try check(code)
    }

    private func check(_ code: Int32) throws {
        guard code != 0 else { return }
        throw StorageError.io(name: "a temporary file", operation: "write", reason: FileDescriptorIO.message(code))
    }

    // MARK: Reading back

    /// Calls `body` with successive chunks of everything written, from the start.
    func forEachChunk(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        try flush()
        var offset: off_t = 0
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = chunk.withUnsafeMutableBytes { raw in pread(fd, raw.baseAddress, raw.count, offset) }
            if count < 0 {
                if errno == EINTR { continue }
                throw StorageError.io(name: "a temporary file", operation: "read", reason: FileDescriptorIO.message(errno))
            }
            if count == 0 { return }
            try chunk.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            offset += off_t(count)
        }
    }
}
