import Foundation
import KeepsakeSupport

/// Reads a file through its descriptor, front to back or at any offset.
public final class FileByteSource: RandomAccessSource {
    private var fd: Int32
    private let name: String

    /// Takes ownership of an open descriptor.
    public init(fd: Int32, name: String) {
        self.fd = fd
        self.name = name
    }

    /// Opens a local file for reading.
    public convenience init(path: String) throws {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw StorageError.io(name: path, operation: "open", reason: FileDescriptorIO.message(errno))
        }
        posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
        self.init(fd: fd, name: path)
    }

    deinit { close() }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard fd >= 0 else { throw StorageError.io(name: name, operation: "read", reason: "closed") }
        let count = FileDescriptorIO.read(fd, buffer)
        if count < 0 {
            throw StorageError.io(name: name, operation: "read", reason: FileDescriptorIO.message(Int32(-count)))
        }
        return count
    }

    public func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    public func size() throws -> Int64 {
        var info = stat()
        guard fd >= 0, fstat(fd, &info) == 0 else {
            throw StorageError.io(name: name, operation: "stat", reason: FileDescriptorIO.message(fd >= 0 ? errno : EBADF))
        }
        return Int64(info.st_size)
    }

    public func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard fd >= 0 else { throw StorageError.io(name: name, operation: "read", reason: "closed") }
        while true {
            let count = pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
            if count >= 0 { return count }
            if errno != EINTR { throw StorageError.io(name: name, operation: "read", reason: FileDescriptorIO.message(errno)) }
        }
    }
}
