import Foundation

/// Small wrappers over read/write system calls that retry on EINTR and finish partial writes.
package enum FileDescriptorIO {
    /// Writes all bytes to `fd`; returns 0 or the errno of the failure.
    package static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Int32 {
        guard var pointer = buffer.baseAddress else { return 0 }
        var remaining = buffer.count
        while remaining > 0 {
            let written = Glibc.write(fd, pointer, remaining)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            pointer += written
            remaining -= written
        }
        return 0
    }

    /// Reads up to `buffer.count` bytes; returns the count, or -errno.
    package static func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        while true {
            let count = Glibc.read(fd, base, buffer.count)
            if count < 0 && errno == EINTR { continue }
            return count < 0 ? -Int(errno) : count
        }
    }

    /// Fills as much of `buffer` as the file gives (stops early only at end of file).
    package static func readFully(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
        var total = 0
        while total < buffer.count {
            let count = read(fd, UnsafeMutableRawBufferPointer(rebasing: buffer[total...]))
            if count < 0 { return total == 0 ? count : total }
            if count == 0 { break }
            total += count
        }
        return total
    }

    /// The message for an errno value.
    package static func message(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
