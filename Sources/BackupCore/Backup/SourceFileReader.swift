import CPosix
import Foundation
import KeepsakeArchive
import KeepsakeHashing
import KeepsakeModel
import KeepsakeScan
import KeepsakeSupport

/// Reads from the file system what a backup stores of a scanned item: a regular file's
/// content (opened without following a symlink, checked against what the scan saw, with
/// its extended attributes and holes), a symlink's target, a folder's extended attributes.
///
/// Reading is kept apart from writing the archive: content goes to a consumer the caller
/// gives, and problems come back as values instead of being reported here, so that the one
/// archive writer reports them in scan order. A reader owns a buffer and a hasher and is
/// used by one thread at a time; reading several files at once takes one reader each.
final class SourceFileReader {
    // MARK: Types

    /// What a read gave, or why the item is left out (or stored incomplete).
    enum Outcome<Value> {
        case read(Value)
        case problem(PathWarning)
    }

    /// A regular file open for reading, described as it is now rather than as the scan saw
    /// it. The descriptor closes when the last reference goes.
    final class OpenFile {
        /// The header to store: the scan's, with the size, modification time, extended
        /// attributes and data regions of the open file.
        let header: ArchiveEntryHeader
        /// `fstat` of the open file, to notice a change while it is read.
        fileprivate let info: stat
        fileprivate let fd: Int32
        /// The absolute path, for warnings.
        fileprivate let displayPath: String
        /// True when this is a new version of the file saved (by rename) since the scan:
        /// its manifest line then describes this file, not the one the scan saw.
        let replaced: Bool

        fileprivate init(fd: Int32, info: stat, header: ArchiveEntryHeader, displayPath: String, replaced: Bool) {
            self.fd = fd
            self.info = info
            self.header = header
            self.displayPath = displayPath
            self.replaced = replaced
        }

        /// The status of the open file (for the manifest line of a replaced one).
        var status: stat { info }

        deinit { close(fd) }

        /// The modification time when opened, in nanoseconds (what the manifest records).
        var mtimeNanoseconds: Int64 { Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec) }
    }

    /// A file's content as read: the SHA-256 of every byte handed on (holes as zeros), for
    /// a big file the SHA-256 of each block of them too (same pass), and, when that may not
    /// be what the file holds, why.
    struct Content {
        let sha256: String
        let blocks: BlockTable?
        let problem: PathWarning?
    }

    // MARK: State

    private let cancellation: CancellationFlag
    /// See `BackupRequest.readPause`.
    private let readPause: TimeInterval
    private let hasher = SHA256Hasher()
    /// While a file of `BlockTable.threshold` bytes or more is read: its blocks' digests.
    private var blocks: BlockDigester?
    private let buffer: UnsafeMutableRawBufferPointer
    /// The most read at once.
    static let bufferSize = 1 << 20

    // MARK: Life cycle

    /// A reader that stops between chunks once `cancellation` is set, pausing `readPause`
    /// seconds before each file and after each MiB (for tests only).
    init(cancellation: CancellationFlag, readPause: TimeInterval) {
        self.cancellation = cancellation
        self.readPause = readPause
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: SourceFileReader.bufferSize, alignment: 4096)
    }

    deinit { buffer.deallocate() }

    // MARK: Regular files

    /// Opens the regular file `item` (scanned with `header`) for reading, unless it cannot
    /// be opened or is no longer the file the scan saw.
    func open(_ item: ScannedItem, header: ArchiveEntryHeader) -> Outcome<OpenFile> {
        let path = PathBytes.display(item.absolutePath)
        pauseForTests()
        var fd = PathBytes.syscall(item.name) { openat(item.parentFD, $0, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | KS_O_NOATIME) }
        if fd < 0 && errno == EPERM {
            // KS_O_NOATIME is only allowed on one's own files.
            fd = PathBytes.syscall(item.name) { openat(item.parentFD, $0, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        }
        guard fd >= 0 else {
            let reason = errno == ELOOP ? "it was replaced by a symlink while the backup ran" : FileDescriptorIO.message(errno)
            return .problem(PathWarning(kind: .unreadable, path: path, reason: reason))
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let warning = PathWarning(kind: .unreadable, path: path, reason: FileDescriptorIO.message(errno))
            close(fd)
            return .problem(warning)
        }
        var header = header
        var replaced = false
        if info.st_mode & S_IFMT != S_IFREG || info.st_ino != item.info.st_ino {
            // Saved by write-then-rename since the scan (editors and many programs save that
            // way): a whole new version, complete once renamed, which this descriptor now
            // holds. It is stored with its own mode and owner. Not so a name of several
            // (hard links are grouped by the scan) or something that is no longer a file.
            guard info.st_mode & S_IFMT == S_IFREG, info.st_dev == item.info.st_dev, item.info.st_nlink == 1,
                  info.st_nlink == 1 else {
                close(fd)
                return .problem(PathWarning(kind: .changed, path: path, reason: "it was replaced while the backup ran; left out"))
            }
            replaced = true
            header.permissions = UInt32(info.st_mode) & 0o7777
            header.uid = info.st_uid
            header.gid = info.st_gid
            header.userName = UserNames.shared.userName(for: info.st_uid)
            header.groupName = UserNames.shared.groupName(for: info.st_gid)
        }
        let size = Int64(info.st_size)
        header.size = size
        header.mtimeSeconds = Int64(info.st_mtim.tv_sec)
        header.mtimeNanoseconds = Int32(info.st_mtim.tv_nsec)
        header.xattrs = SourceFileReader.extendedAttributes(fd: fd, path: item.absolutePath)
        // Fewer allocated blocks than the size says: the file has holes worth keeping.
        header.sparseRegions = Int64(info.st_blocks) * 512 < size ? SourceFileReader.dataRegions(fd: fd, size: size) : []
        posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
        return .read(OpenFile(fd: fd, info: info, header: header, displayPath: path, replaced: replaced))
    }

    /// Reads the whole content of `file` into `consume`, exactly `file.header.size` bytes:
    /// holes as zeros, and a file that shrank or failed to read padded with zeros (the
    /// header promised that size; the problem says the copy is incomplete).
    /// With `digestingBlocks` false, a big file gets no block table (the consumer makes its own).
    func readContent(of file: OpenFile, digestingBlocks: Bool = true,
                     into consume: (UnsafeRawBufferPointer) throws -> Void) throws -> Content {
        try withoutActuallyEscaping(consume) { consume in
            var destination = ConsumingDestination(scratch: buffer, consume: consume)
            return try readContent(of: file, digestingBlocks: digestingBlocks, into: &destination)
        }
    }

    /// `readContent(of:into:)` reading straight into the buffers `destination` hands out.
    func readContent(of file: OpenFile, digestingBlocks: Bool = true,
                     into destination: inout some ContentDestination) throws -> Content {
        let size = file.header.size
        let regions = file.header.sparseRegions.isEmpty ? [ArchiveEntryHeader.SparseRegion(offset: 0, length: size)]
            : file.header.sparseRegions
        var position: Int64 = 0
        var problem: PathWarning?
        let blockSize = BlockTable.blockSize(forFileSize: size)
        blocks = digestingBlocks && size >= BlockTable.threshold ? BlockDigester(blockSize: blockSize, digestLength: BlockTable.digestLength) : nil
        defer { blocks = nil }
        for region in regions {
            try feedZeros(region.offset - position, into: &destination)
            position = region.offset
            let end = region.offset + region.length
            while position < end {
                try cancellation.check()
                let target = try destination.buffer(wanted: Int(min(Int64(SourceFileReader.bufferSize), end - position)))
                let count = pread(file.fd, target.baseAddress, target.count, off_t(position))
                if count < 0 && errno == EINTR { continue }
                if count <= 0 {
                    problem = count < 0
                        ? PathWarning(kind: .unreadable, path: file.displayPath, reason: "read failed after \(position) bytes (\(FileDescriptorIO.message(errno))); the rest was stored as zeros")
                        : PathWarning(kind: .changed, path: file.displayPath, reason: "it shrank while being read; the missing end was stored as zeros")
                    try feedZeros(size - position, into: &destination)
                    position = size
                    break
                }
                hasher.update(UnsafeRawBufferPointer(rebasing: target[0..<count]))
                blocks?.update(UnsafeRawBufferPointer(rebasing: target[0..<count]))
                try destination.filled(count)
                position += Int64(count)
                pauseForTests()
            }
            if problem != nil { break }
        }
        try feedZeros(size - position, into: &destination)
        var after = stat()
        let before = file.info
        if problem == nil, fstat(file.fd, &after) == 0,
           after.st_size != before.st_size || after.st_mtim.tv_sec != before.st_mtim.tv_sec
            || after.st_mtim.tv_nsec != before.st_mtim.tv_nsec {
            problem = PathWarning(kind: .changed, path: file.displayPath, reason: "it changed while being read; the stored copy may be inconsistent")
        }
        let table = blocks.map { BlockTable(blockSize: blockSize, digests: $0.finish()) }
        return Content(sha256: hasher.finalizeHex(), blocks: table, problem: problem)
    }

    /// Feeds `count` zero bytes (a hole, or padding) to the hash and to `destination`; a
    /// hole can be a terabyte, so a stop is honoured between chunks.
    private func feedZeros(_ count: Int64, into destination: inout some ContentDestination) throws {
        var remaining = count
        while remaining > 0 {
            try cancellation.check()
            let target = try destination.buffer(wanted: Int(min(Int64(SourceFileReader.bufferSize), remaining)))
            let filled = Int(min(Int64(target.count), remaining))
            target.initializeMemory(as: UInt8.self, repeating: 0)
            hasher.update(UnsafeRawBufferPointer(rebasing: target[0..<filled]))
            blocks?.update(UnsafeRawBufferPointer(rebasing: target[0..<filled]))
            try destination.filled(filled)
            remaining -= Int64(filled)
        }
    }

    private func pauseForTests() {
        if readPause > 0 { usleep(useconds_t(min(readPause, 10) * 1_000_000)) }
    }

    // MARK: Other items

    /// The target of the symlink `item`.
    func linkTarget(of item: ScannedItem) -> Outcome<[UInt8]> {
        var target = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = PathBytes.syscall(item.name) { name in
            target.withUnsafeMutableBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { chars -> Int in
                    guard let base = chars.baseAddress else { return -1 }
                    return readlinkat(item.parentFD, name, base, chars.count)
                }
            }
        }
        guard count >= 0 else {
            return .problem(PathWarning(kind: .unreadable, path: PathBytes.display(item.absolutePath),
                                        reason: FileDescriptorIO.message(errno)))
        }
        return .read(Array(target[0..<count]))
    }

    /// The extended attributes of the folder `item`, read by path (without following a
    /// symlink).
    func folderAttributes(of item: ScannedItem) -> [ArchiveEntryHeader.XAttribute] {
        SourceFileReader.extendedAttributes(fd: -1, path: item.absolutePath)
    }

    // MARK: File system details

    /// User, trusted and security attributes (ACLs live in system.* and are not kept), of
    /// the open file `fd`, or of `path` when `fd` is -1.
    private static func extendedAttributes(fd: Int32, path: [UInt8]) -> [ArchiveEntryHeader.XAttribute] {
        func list(_ buffer: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int {
            fd >= 0 ? ks_flistxattr(fd, buffer, size) : PathBytes.syscall(path) { ks_llistxattr($0, buffer, size) }
        }
        let needed = list(nil, 0)
        guard needed > 0 else { return [] }
        var names = [CChar](repeating: 0, count: needed)
        let length = names.withUnsafeMutableBufferPointer { list($0.baseAddress, needed) }
        guard length > 0 else { return [] }
        var attributes: [ArchiveEntryHeader.XAttribute] = []
        for rawName in names[0..<length].split(separator: 0) {
            let nameBytes = rawName.map { UInt8(bitPattern: $0) }
            guard let name = PathBytes.validString(nameBytes), !name.hasPrefix("system.") else { continue }
            func get(_ buffer: UnsafeMutableRawPointer?, _ size: Int) -> Int {
                fd >= 0 ? ks_fgetxattr(fd, name, buffer, size) : PathBytes.syscall(path) { ks_lgetxattr($0, name, buffer, size) }
            }
            let size = get(nil, 0)
            guard size >= 0 else { continue }
            var value = [UInt8](repeating: 0, count: size)
            let got = value.withUnsafeMutableBytes { get($0.baseAddress, size) }
            guard got >= 0 else { continue }
            attributes.append(.init(name: name, value: Array(value[0..<got])))
        }
        return attributes
    }

    /// The data runs of a file with holes (KS_SEEK_DATA / KS_SEEK_HOLE).
    private static func dataRegions(fd: Int32, size: Int64) -> [ArchiveEntryHeader.SparseRegion] {
        var regions: [ArchiveEntryHeader.SparseRegion] = []
        var offset: off_t = 0
        while offset < size {
            let data = lseek(fd, offset, KS_SEEK_DATA)
            if data < 0 { break }
            let hole = lseek(fd, data, KS_SEEK_HOLE)
            if hole < 0 { return [] }
            regions.append(.init(offset: Int64(data), length: Int64(min(Int64(hole), size) - Int64(data))))
            offset = hole
        }
        // A file that is all hole still needs one (empty) region at its end.
        if regions.isEmpty || regions.last.map({ $0.offset + $0.length }) != size {
            regions.append(.init(offset: size, length: 0))
        }
        return regions
    }
}
