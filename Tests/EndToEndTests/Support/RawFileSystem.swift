import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// File-system calls on raw byte paths, for names Foundation cannot represent (a
/// newline, an invalid UTF-8 byte) and for things Foundation does not do (fifos,
/// nanosecond times, xattrs, sparse files, inodes).
enum RawFileSystem {
    // MARK: Errors

    /// A failed system call, naming the call, the path and errno's message.
    struct Failure: Error, CustomStringConvertible {
        let description: String

        init(_ call: String, _ path: [UInt8], _ code: Int32 = errno) {
            description = "\(call)(\(RawFileSystem.display(path))): \(String(cString: strerror(code)))"
        }
    }

    // MARK: Paths

    /// The bytes of a Swift string path.
    static func bytes(_ path: String) -> [UInt8] { Array(path.utf8) }

    /// `a/b` from two byte paths.
    static func join(_ parent: [UInt8], _ child: [UInt8]) -> [UInt8] {
        if parent.isEmpty { return child }
        if child.isEmpty { return parent }
        return parent + [UInt8(ascii: "/")] + child
    }

    /// `a/b` from a byte path and a string component.
    static func join(_ parent: [UInt8], _ child: String) -> [UInt8] { join(parent, bytes(child)) }

    /// A readable form of a byte path, as `keepsake list` prints it: valid UTF-8 as is,
    /// `\n` and `\t` for newline and tab, `\xNN` for other control bytes and invalid UTF-8.
    static func display(_ path: [UInt8]) -> String {
        var out = ""
        var index = 0
        while index < path.count {
            let byte = path[index]
            if byte < 0x20 || byte == 0x7f {
                // Control characters as `keepsake list` shows them.
                out += byte == 0x0a ? "\\n" : byte == 0x09 ? "\\t" : String(format: "\\x%02x", byte)
                index += 1
                continue
            }
            var length = 1
            if byte >= 0xc2 && byte <= 0xdf { length = 2 } else if byte >= 0xe0 && byte <= 0xef { length = 3 } else if byte >= 0xf0 && byte <= 0xf4 { length = 4 }
            if byte >= 0x80, (byte < 0xc2 || byte > 0xf4) {
                out += String(format: "\\x%02x", byte)
                index += 1
                continue
            }
            let end = min(path.count, index + length)
            if let text = String(validating: path[index..<end], as: UTF8.self) {
                out += text
                index = end
            } else {
                out += String(format: "\\x%02x", byte)
                index += 1
            }
        }
        return out
    }

    /// Calls `body` with a NUL-terminated copy of `path`.
    static func withCPath<T>(_ path: [UInt8], _ body: (UnsafePointer<CChar>) throws -> T) rethrows -> T {
        let terminated = path.map { CChar(bitPattern: $0) } + [0]
        return try terminated.withUnsafeBufferPointer { try body($0.baseAddress!) }
    }

    // MARK: Creating

    /// Creates (or replaces) a regular file holding `contents`, with `mode`.
    static func writeFile(_ path: [UInt8], contents: [UInt8], mode: mode_t = 0o644) throws {
        let fd = withCPath(path) { open($0, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        guard fd >= 0 else { throw Failure("open", path) }
        defer { close(fd) }
        try writeAll(fd, contents, at: 0, path: path)
        guard fchmod(fd, mode) == 0 else { throw Failure("fchmod", path) }
    }

    /// Writes `contents` at `offset` of an open file, completely.
    static func writeAll(_ fd: Int32, _ contents: [UInt8], at offset: Int, path: [UInt8]) throws {
        var written = 0
        try contents.withUnsafeBytes { raw in
            while written < raw.count {
                let count = pwrite(fd, raw.baseAddress! + written, raw.count - written, off_t(offset + written))
                if count < 0 {
                    if errno == EINTR { continue }
                    throw Failure("pwrite", path)
                }
                written += count
            }
        }
    }

    /// Creates a sparse file of `size` bytes holding `chunks` at their offsets, holes elsewhere.
    static func writeSparseFile(_ path: [UInt8], size: Int, chunks: [(offset: Int, bytes: [UInt8])]) throws {
        let fd = withCPath(path) { open($0, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
        guard fd >= 0 else { throw Failure("open", path) }
        defer { close(fd) }
        guard ftruncate(fd, off_t(size)) == 0 else { throw Failure("ftruncate", path) }
        for chunk in chunks {
            try writeAll(fd, chunk.bytes, at: chunk.offset, path: path)
        }
        guard fsync(fd) == 0 else { throw Failure("fsync", path) }
    }

    /// Creates a folder with `mode` (folders on the way too).
    static func makeDirectory(_ path: [UInt8], mode: mode_t = 0o755) throws {
        if lstat(path) != nil { return }
        if let slash = path.lastIndex(of: UInt8(ascii: "/")), slash > 0 {
            try makeDirectory(Array(path[..<slash]), mode: 0o755)
        }
        guard withCPath(path, { mkdir($0, 0o700) }) == 0 || errno == EEXIST else { throw Failure("mkdir", path) }
        guard withCPath(path, { chmod($0, mode) }) == 0 else { throw Failure("chmod", path) }
    }

    /// Creates a symlink at `path` pointing to `target`.
    static func makeSymlink(_ path: [UInt8], target: [UInt8]) throws {
        let status = withCPath(target) { cTarget in withCPath(path) { symlink(cTarget, $0) } }
        guard status == 0 else { throw Failure("symlink", path) }
    }

    /// Creates a hard link `path` to the existing file `existing`.
    static func makeHardLink(_ path: [UInt8], to existing: [UInt8]) throws {
        let status = withCPath(existing) { cExisting in withCPath(path) { link(cExisting, $0) } }
        guard status == 0 else { throw Failure("link", path) }
    }

    /// Creates a fifo with `mode`.
    static func makeFifo(_ path: [UInt8], mode: mode_t = 0o644) throws {
        guard withCPath(path, { mkfifo($0, 0o600) }) == 0 else { throw Failure("mkfifo", path) }
        guard withCPath(path, { chmod($0, mode) }) == 0 else { throw Failure("chmod", path) }
    }

    /// Sets the modification time (and access time) of `path` itself, never following a symlink.
    static func setModificationTime(_ path: [UInt8], seconds: Int, nanoseconds: Int) throws {
        var times = [timespec(tv_sec: seconds, tv_nsec: nanoseconds), timespec(tv_sec: seconds, tv_nsec: nanoseconds)]
        let status = withCPath(path) { utimensat(AT_FDCWD, $0, &times, AT_SYMLINK_NOFOLLOW) }
        guard status == 0 else { throw Failure("utimensat", path) }
    }

    /// Changes the owner of `path` itself (not a symlink's target).
    static func setOwner(_ path: [UInt8], uid: uid_t, gid: gid_t) throws {
        guard withCPath(path, { lchown($0, uid, gid) }) == 0 else { throw Failure("lchown", path) }
    }

    /// Changes the permission bits of `path`.
    static func setMode(_ path: [UInt8], _ mode: mode_t) throws {
        guard withCPath(path, { chmod($0, mode) }) == 0 else { throw Failure("chmod", path) }
    }

    // MARK: Reading

    /// `lstat` of `path`, or nil when it does not exist.
    static func lstat(_ path: [UInt8]) -> stat? {
        var info = stat()
        return withCPath(path) { Glibc.lstat($0, &info) } == 0 ? info : nil
    }

    /// `lstat` of a string path, or nil.
    static func lstat(_ path: String) -> stat? { lstat(bytes(path)) }

    /// True when something (even a dangling symlink) exists at `path`.
    static func exists(_ path: String) -> Bool { lstat(path) != nil }

    /// The target of the symlink at `path`, or nil.
    static func readLink(_ path: [UInt8]) -> [UInt8]? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = withCPath(path) { readlink($0, &buffer, buffer.count) }
        guard count >= 0 else { return nil }
        return buffer[..<count].map { UInt8(bitPattern: $0) }
    }

    /// The names in a folder (without `.` and `..`), sorted bytewise.
    static func listDirectory(_ path: [UInt8]) throws -> [[UInt8]] {
        guard let directory = withCPath(path, { opendir($0) }) else { throw Failure("opendir", path) }
        defer { closedir(directory) }
        var names: [[UInt8]] = []
        while let entry = readdir(directory) {
            // Through a pointer to d_name: copying the whole field reads past the last record.
            guard let pointer = entry.pointer(to: \.d_name) else { continue }
            let field = UnsafeRawPointer(pointer).assumingMemoryBound(to: CChar.self)
            let name = Array(UnsafeRawBufferPointer(start: field, count: strlen(field)))
            if name == [46] || name == [46, 46] { continue }
            names.append(name)
        }
        return names.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// The whole content of a (small) file.
    static func readFile(_ path: [UInt8]) throws -> [UInt8] {
        let fd = withCPath(path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw Failure("open", path) }
        defer { close(fd) }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure("read", path)
            }
            if count == 0 { break }
            result.append(contentsOf: buffer[..<count])
        }
        return result
    }

    /// True when two files hold the same bytes (compared in blocks, never whole in memory).
    static func filesEqual(_ first: [UInt8], _ second: [UInt8]) throws -> Bool {
        let a = withCPath(first) { open($0, O_RDONLY | O_CLOEXEC) }
        guard a >= 0 else { throw Failure("open", first) }
        defer { close(a) }
        let b = withCPath(second) { open($0, O_RDONLY | O_CLOEXEC) }
        guard b >= 0 else { throw Failure("open", second) }
        defer { close(b) }
        // Buffers as big as the first file (a byte more, to see its end), 1 MiB at most: trees
        // of thousands of small files are compared, and two 1 MiB buffers each took seconds
        // in all (many more under ASan).
        var info = stat()
        guard fstat(a, &info) == 0 else { throw Failure("fstat", first) }
        let size = min(max(Int(info.st_size), 0) + 1, 1 << 20)
        var left = [UInt8](repeating: 0, count: size)
        var right = [UInt8](repeating: 0, count: size)
        while true {
            let leftCount = try readFully(a, &left, path: first)
            let rightCount = try readFully(b, &right, path: second)
            if leftCount != rightCount { return false }
            if leftCount == 0 { return true }
            if memcmp(left, right, leftCount) != 0 { return false }
        }
    }

    /// Reads until `buffer` is full or the file ends; returns the count.
    private static func readFully(_ fd: Int32, _ buffer: inout [UInt8], path: [UInt8]) throws -> Int {
        var total = 0
        try buffer.withUnsafeMutableBytes { raw in
            while total < raw.count {
                let count = read(fd, raw.baseAddress! + total, raw.count - total)
                if count < 0 {
                    if errno == EINTR { continue }
                    throw Failure("read", path)
                }
                if count == 0 { break }
                total += count
            }
        }
        return total
    }

    // MARK: Extended attributes

    private typealias SetXattr = @convention(c) (UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafeRawPointer?, Int, Int32) -> Int32
    private typealias GetXattr = @convention(c) (UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafeMutableRawPointer?, Int) -> Int

    /// A libc function by name (Glibc's Swift module does not declare the xattr calls).
    private static func libcSymbol<T>(_ name: String, as type: T.Type) -> T? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: type)
    }

    /// Sets an extended attribute on `path` itself (not a symlink's target); returns 0 or errno.
    static func setXattr(_ path: [UInt8], name: String, value: [UInt8]) -> Int32 {
        guard let call = libcSymbol("lsetxattr", as: SetXattr.self) else { return ENOSYS }
        let status = withCPath(path) { cPath in
            value.withUnsafeBytes { raw in call(cPath, name, raw.baseAddress, raw.count, 0) }
        }
        return status == 0 ? 0 : errno
    }

    /// The value of an extended attribute of `path` itself, or nil when it has none.
    static func getXattr(_ path: [UInt8], name: String) -> [UInt8]? {
        guard let call = libcSymbol("lgetxattr", as: GetXattr.self) else { return nil }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = withCPath(path) { cPath in
            buffer.withUnsafeMutableBytes { raw in call(cPath, name, raw.baseAddress, raw.count) }
        }
        return count >= 0 ? Array(buffer[..<count]) : nil
    }
}
