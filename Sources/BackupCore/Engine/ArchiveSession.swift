import CPosix
import Foundation

/// Writes scanned items into an archive: headers, content (hashed on the way), and the
/// manifest lines, which are spooled to a temporary file until the end.
final class ArchiveSession {
    // MARK: State

    private let writer: ArchiveWriter
    private let cancellation: CancellationFlag
    private weak var events: EngineEventSink?
    private let warn: (PathWarning) -> Void
    /// The manifest's entry lines, in archive order.
    let entries: SpoolFile
    /// `sha256sum -c` lines for the archive's SHA256SUMS file.
    private let checksums: SpoolFile
    private let hasher = SHA256Hasher()
    private var line = JSONWriter()
    private var buffer: UnsafeMutableRawBufferPointer
    private static let bufferSize = 1 << 20
    private static let zeros = [UInt8](repeating: 0, count: 1 << 16)

    /// First archive path, hash and holder of each multiply-linked file.
    private var linkedFiles: [FileIdentity: (path: [UInt8], sha256: String, size: Int64, storedIn: BackupID?)] = [:]
    /// The parent backup of an incremental run, read in step with the scan.
    private let parent: ParentCursor?
    private let chain: ChainPolicy
    /// See `BackupRequest.readPause`.
    var readPause: TimeInterval = 0
    /// What the sources are expected to hold, in bytes (the last backup of the same
    /// sources), for a determinate progress bar; nil when unknown.
    var expectedBytes: Int64?
    private var holders = Set<BackupID>()
    private var newFiles: Int64 = 0
    private var newBytes: Int64 = 0

    private var files: Int64 = 0
    private var directories: Int64 = 0
    private var symlinks: Int64 = 0
    private var hardlinks: Int64 = 0
    private var other: Int64 = 0
    private var bytes: Int64 = 0
    private var lastProgress = Date.distantPast

    // MARK: Life cycle

    init(writer: ArchiveWriter, cancellation: CancellationFlag, events: EngineEventSink?, parent: ParentCursor?,
         chain: ChainPolicy, warn: @escaping (PathWarning) -> Void) throws {
        self.writer = writer
        self.parent = parent
        self.chain = chain
        self.cancellation = cancellation
        self.events = events
        self.warn = warn
        entries = try SpoolFile()
        checksums = try SpoolFile()
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: ArchiveSession.bufferSize, alignment: 4096)
    }

    /// Writes the marker folder that opens every Keepsake archive.
    func writeMarker(now: Date) throws {
        try writer.writeHeader(ArchiveEntryHeader(path: BackupNaming.markerEntryPath, type: .directory, permissions: 0o755,
                                                  uid: geteuid(), gid: getegid(),
                                                  mtimeSeconds: Int64(now.timeIntervalSince1970.rounded(.down))))
    }

    deinit { buffer.deallocate() }

    // MARK: Items

    /// Adds one scanned item. Problems with the item become warnings; only archive or
    /// destination failures throw.
    func add(_ item: ScannedItem) throws {
        try cancellation.check()
        if BackupNaming.isMetadataEntry(item.archivePath) {
            warn(PathWarning(kind: .skipped, path: PathBytes.display(item.absolutePath),
                             reason: "the name is reserved for Keepsake's own manifest; left out"))
            return
        }
        let info = item.info
        var header = ArchiveEntryHeader(path: item.archivePath, type: item.type, permissions: UInt32(info.st_mode) & 0o7777,
                                        uid: info.st_uid, gid: info.st_gid,
                                        userName: UserNames.shared.userName(for: info.st_uid),
                                        groupName: UserNames.shared.groupName(for: info.st_gid),
                                        mtimeSeconds: Int64(info.st_mtim.tv_sec),
                                        mtimeNanoseconds: Int32(info.st_mtim.tv_nsec))
        var entry = manifestEntry(header, info: info)
        switch item.type {
        case .socket:
            return // tar formats cannot hold sockets; like tar, they are left out
        case .directory:
            header.xattrs = extendedAttributes(fd: -1, path: item.absolutePath)
            let start = try startEntry()
            try writer.writeHeader(header)
            try endEntry(&entry, from: start)
            directories += 1
        case .symlink:
            guard let target = readLink(item) else { return }
            header.linkTarget = target
            entry.linkTarget = target
            let start = try startEntry()
            try writer.writeHeader(header)
            try endEntry(&entry, from: start)
            symlinks += 1
        case .fifo, .characterDevice, .blockDevice:
            header.rdev = UInt64(info.st_rdev)
            entry.rdev = UInt64(info.st_rdev)
            let start = try startEntry()
            try writer.writeHeader(header)
            try endEntry(&entry, from: start)
            other += 1
        case .file, .hardlink:
            let identity = FileIdentity(info)
            if info.st_nlink > 1, let first = linkedFiles[identity] {
                header.type = .hardlink
                header.linkTarget = first.path
                entry.type = .hardlink
                entry.linkTarget = first.path
                entry.size = first.size
                entry.sha256 = first.sha256
                if let holder = first.storedIn {
                    // The first name's content lives in an earlier archive: a tar hard link
                    // cannot point there, so this name is recorded in the manifest only.
                    entry.storedIn = holder
                } else {
                    let start = try startEntry()
                    try writer.writeHeader(header)
                    try endEntry(&entry, from: start)
                    try appendChecksum(first.sha256, path: item.archivePath)
                }
                hardlinks += 1
            } else if let reference = try unchanged(item) {
                // Same file as in the parent backup: point at the archive that holds it.
                entry.size = reference.size
                entry.sha256 = reference.sha256
                entry.storedIn = reference.storedIn
                entry.archiveOffset = reference.archiveOffset
                entry.archiveLength = reference.archiveLength
                if let holder = reference.storedIn { holders.insert(holder) }
                if info.st_nlink > 1 {
                    linkedFiles[identity] = (item.archivePath, reference.sha256 ?? "", reference.size, reference.storedIn)
                }
                files += 1
                bytes += reference.size
            } else {
                let start = try startEntry()
                guard let stored = try addFile(item, header: header) else { return }
                try endEntry(&entry, from: start)
                entry.size = stored.size
                entry.sha256 = stored.sha256
                entry.mtimeNanoseconds = stored.mtime
                if info.st_nlink > 1 { linkedFiles[identity] = (item.archivePath, stored.sha256, stored.size, nil) }
                try appendChecksum(stored.sha256, path: item.archivePath)
                files += 1
                bytes += stored.size
                newFiles += 1
                newBytes += stored.size
            }
        }
        try appendManifestLine(entry)
        reportProgress(item.archivePath, force: false)
    }

    // MARK: Incremental

    /// The parent's entry for this file when the file has not changed since (same size,
    /// mtime, ctime, inode and device, as the chain policy asks; with `reread`, same
    /// content), with `storedIn` naming the archive that holds the content.
    private func unchanged(_ item: ScannedItem) throws -> ManifestEntry? {
        guard let parent, let previous = parent.entry(for: item.archivePath), previous.sha256 != nil else { return nil }
        let info = item.info
        guard previous.size == Int64(info.st_size) else { return nil }
        var reference = previous
        reference.storedIn = previous.storedIn ?? parent.id
        if chain.reread {
            guard let digest = try contentHash(item), digest == previous.sha256 else { return nil }
            return reference
        }
        let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        let ctime = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        guard previous.mtimeNanoseconds == mtime,
              chain.ignoreCtime || previous.ctimeNanoseconds == ctime,
              chain.ignoreInode || (previous.inode == UInt64(info.st_ino) && previous.device == UInt64(info.st_dev)) else {
            return nil
        }
        return reference
    }

    /// Reads a whole file to hash it (for `--reread`); nil when it cannot be read.
    private func contentHash(_ item: ScannedItem) throws -> String? {
        let fd = PathBytes.syscall(item.name) { openat(item.parentFD, $0, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let hasher = SHA256Hasher()
        while true {
            try cancellation.check()
            let count = FileDescriptorIO.read(fd, buffer)
            if count < 0 { return nil }
            if count == 0 { return hasher.finalizeHex() }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
    }

    /// Stores a regular file's content. Returns nil (after a warning) when it cannot be opened.
    private func addFile(_ item: ScannedItem, header: ArchiveEntryHeader) throws -> (size: Int64, sha256: String, mtime: Int64)? {
        let path = PathBytes.display(item.absolutePath)
        pauseForTests()
        var fd = PathBytes.syscall(item.name) { openat(item.parentFD, $0, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | KS_O_NOATIME) }
        if fd < 0 && errno == EPERM {
            // KS_O_NOATIME is only allowed on one's own files.
            fd = PathBytes.syscall(item.name) { openat(item.parentFD, $0, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        }
        guard fd >= 0 else {
            let reason = errno == ELOOP ? "it was replaced by a symlink while the backup ran" : FileDescriptorIO.message(errno)
            warn(PathWarning(kind: .unreadable, path: path, reason: reason))
            return nil
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            warn(PathWarning(kind: .unreadable, path: path, reason: FileDescriptorIO.message(errno)))
            return nil
        }
        guard info.st_mode & S_IFMT == S_IFREG, info.st_ino == item.info.st_ino else {
            warn(PathWarning(kind: .changed, path: path, reason: "it was replaced while the backup ran; left out"))
            return nil
        }
        let size = Int64(info.st_size)
        var header = header
        header.size = size
        header.mtimeSeconds = Int64(info.st_mtim.tv_sec)
        header.mtimeNanoseconds = Int32(info.st_mtim.tv_nsec)
        header.xattrs = extendedAttributes(fd: fd, path: item.absolutePath)
        // Fewer allocated blocks than the size says: the file has holes worth keeping.
        header.sparseRegions = Int64(info.st_blocks) * 512 < size ? dataRegions(fd: fd, size: size) : []
        posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
        try writer.writeHeader(header)

        let regions = header.sparseRegions.isEmpty ? [ArchiveEntryHeader.SparseRegion(offset: 0, length: size)] : header.sparseRegions
        var position: Int64 = 0
        var problem: PathWarning?
        for region in regions {
            try writeZeros(region.offset - position, path: header.path)
            position = region.offset
            let end = region.offset + region.length
            while position < end {
                try cancellation.check()
                let wanted = Int(min(Int64(buffer.count), end - position))
                let count = pread(fd, buffer.baseAddress, wanted, off_t(position))
                if count < 0 && errno == EINTR { continue }
                if count <= 0 {
                    // The header promised `size` bytes: pad, and say the copy is incomplete.
                    problem = count < 0
                        ? PathWarning(kind: .unreadable, path: path, reason: "read failed after \(position) bytes (\(FileDescriptorIO.message(errno))); the rest was stored as zeros")
                        : PathWarning(kind: .changed, path: path, reason: "it shrank while being read; the missing end was stored as zeros")
                    try writeZeros(size - position, path: header.path)
                    position = size
                    break
                }
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                hasher.update(chunk)
                try writer.writeData(chunk, path: header.path)
                position += Int64(count)
                pauseForTests()
                if position & ((1 << 26) - 1) < Int64(count) { reportProgress(item.archivePath, force: false) }
            }
            if problem != nil { break }
        }
        try writeZeros(size - position, path: header.path)
        var after = stat()
        if problem == nil, fstat(fd, &after) == 0,
           after.st_size != info.st_size || after.st_mtim.tv_sec != info.st_mtim.tv_sec || after.st_mtim.tv_nsec != info.st_mtim.tv_nsec {
            problem = PathWarning(kind: .changed, path: path, reason: "it changed while being read; the stored copy may be inconsistent")
        }
        if let problem { warn(problem) }
        let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        return (size, hasher.finalizeHex(), mtime)
    }

    private func pauseForTests() {
        if readPause > 0 { usleep(useconds_t(min(readPause, 10) * 1_000_000)) }
    }

    /// Feeds `count` zero bytes (a hole, or padding) to the hash and the archive; a hole can
    /// be a terabyte, so a stop is honoured between chunks.
    private func writeZeros(_ count: Int64, path: [UInt8]) throws {
        var remaining = count
        try ArchiveSession.zeros.withUnsafeBytes { zeros in
            while remaining > 0 {
                try cancellation.check()
                let chunk = UnsafeRawBufferPointer(rebasing: zeros[0..<Int(min(Int64(zeros.count), remaining))])
                hasher.update(chunk)
                try writer.writeData(chunk, path: path)
                remaining -= Int64(chunk.count)
            }
        }
    }

    // MARK: Standard input

    /// A stdin name as an archive path: relative, no `..`, no empty name.
    static func safeStdinPath(_ name: [UInt8]) -> [UInt8]? {
        let components = PathBytes.components(name)
        guard !components.isEmpty, !components.contains([46, 46]) else { return nil }
        let path = components.dropFirst().reduce(components[0]) { PathBytes.join($0, $1) }
        return BackupNaming.isMetadataEntry(path) ? nil : path
    }

    /// Stores standard input as one file. Its size is unknown until the end, and a tar
    /// header needs it first, so the stream is spooled to a temporary file while hashed.
    func addStandardInput(name: [UInt8], now: Date) throws {
        guard let path = ArchiveSession.safeStdinPath(name) else {
            throw EngineError.invalidRequest("The stdin name '\(PathBytes.display(name))' must be a relative path without '..'.")
        }
        let spool = try SpoolFile()
        while true {
            try cancellation.check()
            let count = FileDescriptorIO.read(0, buffer)
            if count < 0 { throw EngineError.stdinUnreadable(reason: FileDescriptorIO.message(Int32(-count))) }
            if count == 0 { break }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            hasher.update(chunk)
            try spool.write(chunk)
        }
        let sha = hasher.finalizeHex()
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        let header = ArchiveEntryHeader(path: path, type: .file, size: spool.size, permissions: 0o600, uid: geteuid(),
                                        gid: getegid(), userName: UserNames.shared.userName(for: geteuid()),
                                        groupName: UserNames.shared.groupName(for: getegid()), mtimeSeconds: seconds)
        var entry = manifestEntry(header, info: nil)
        let start = try startEntry()
        try writer.writeHeader(header)
        try spool.forEachChunk { try writer.writeData($0, path: path) }
        try endEntry(&entry, from: start)
        newFiles += 1
        newBytes += spool.size
        entry.size = spool.size
        entry.sha256 = sha
        try appendManifestLine(entry)
        try appendChecksum(sha, path: path)
        files += 1
        bytes += spool.size
    }

    // MARK: Manifest

    /// Where the next entry starts in the uncompressed tar stream.
    private func startEntry() throws -> Int64 {
        try writer.finishEntry()
        return writer.position
    }

    /// Records where the entry that started at `start` lies in the tar stream, so that a
    /// partial restore can decompress only the frames it spans.
    private func endEntry(_ entry: inout ManifestEntry, from start: Int64) throws {
        try writer.finishEntry()
        entry.archiveOffset = start
        entry.archiveLength = writer.position - start
    }

    private func manifestEntry(_ header: ArchiveEntryHeader, info: stat?) -> ManifestEntry {
        ManifestEntry(path: header.path, type: header.type, size: 0, mode: header.permissions, uid: header.uid,
                      gid: header.gid, userName: header.userName, groupName: header.groupName,
                      mtimeNanoseconds: header.mtimeTotalNanoseconds,
                      ctimeNanoseconds: info.map { Int64($0.st_ctim.tv_sec) * 1_000_000_000 + Int64($0.st_ctim.tv_nsec) } ?? header.mtimeTotalNanoseconds,
                      inode: info.map { UInt64($0.st_ino) } ?? 0, device: info.map { UInt64($0.st_dev) } ?? 0)
    }

    private func appendManifestLine(_ entry: ManifestEntry) throws {
        line.bytes.removeAll(keepingCapacity: true)
        entry.write(to: &line)
        line.bytes.append(UInt8(ascii: "\n"))
        try entries.append(line.bytes)
    }

    /// GNU coreutils' format: names holding a newline or backslash are escaped and the
    /// line starts with a backslash.
    private func appendChecksum(_ sha256: String, path: [UInt8]) throws {
        var escaped: [UInt8] = []
        var needsEscape = false
        for byte in path {
            switch byte {
            case UInt8(ascii: "\n"): escaped.append(contentsOf: [92, 110]); needsEscape = true
            case UInt8(ascii: "\\"): escaped.append(contentsOf: [92, 92]); needsEscape = true
            default: escaped.append(byte)
            }
        }
        var text: [UInt8] = needsEscape ? [92] : []
        text.append(contentsOf: Array(sha256.utf8))
        text.append(contentsOf: [32, 32])
        text.append(contentsOf: escaped)
        text.append(10)
        try checksums.append(text)
    }

    /// Appends SHA256SUMS and the manifest as the archive's last entries.
    func writeMetadataEntries(summary: BackupSummary) throws {
        let summaryLine = Array((summary.json.serialized() + "\n").utf8)
        let seconds = Int64(summary.created.timeIntervalSince1970.rounded(.down))
        let owner = (uid: geteuid(), gid: getegid())
        try entries.flush()
        try checksums.flush()
        try writer.writeHeader(ArchiveEntryHeader(path: BackupNaming.checksumsEntryPath, type: .file, size: checksums.size,
                                                  permissions: 0o644, uid: owner.uid, gid: owner.gid, mtimeSeconds: seconds))
        try checksums.forEachChunk { try writer.writeData($0, path: BackupNaming.checksumsEntryPath) }
        try writer.writeHeader(ArchiveEntryHeader(path: BackupNaming.manifestEntryPath, type: .file,
                                                  size: Int64(summaryLine.count) + entries.size, permissions: 0o644,
                                                  uid: owner.uid, gid: owner.gid, mtimeSeconds: seconds))
        try summaryLine.withUnsafeBytes { try writer.writeData($0, path: BackupNaming.manifestEntryPath) }
        try entries.forEachChunk { try writer.writeData($0, path: BackupNaming.manifestEntryPath) }
        reportProgress(BackupNaming.manifestEntryPath, force: true)
    }

    /// Copies the counts into the summary.
    func fill(_ summary: inout BackupSummary) {
        summary.fileCount = files
        summary.directoryCount = directories
        summary.symlinkCount = symlinks
        summary.hardlinkCount = hardlinks
        summary.otherCount = other
        summary.originalBytes = bytes
        summary.newFileCount = newFiles
        summary.newBytes = newBytes
        summary.reliesOn = holders.sorted()
    }

    // MARK: File system details

    private func readLink(_ item: ScannedItem) -> [UInt8]? {
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
            warn(PathWarning(kind: .unreadable, path: PathBytes.display(item.absolutePath), reason: FileDescriptorIO.message(errno)))
            return nil
        }
        return Array(target[0..<count])
    }

    /// User, trusted and security attributes (ACLs live in system.* and are not kept).
    private func extendedAttributes(fd: Int32, path: [UInt8]) -> [ArchiveEntryHeader.XAttribute] {
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
    private func dataRegions(fd: Int32, size: Int64) -> [ArchiveEntryHeader.SparseRegion] {
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

    // MARK: Progress

    private func reportProgress(_ path: [UInt8], force: Bool) {
        guard let events else { return }
        let now = Date()
        guard force || now.timeIntervalSince(lastProgress) >= 0.1 else { return }
        lastProgress = now
        events.handle(.progress(ProgressSnapshot(entriesDone: files + directories + symlinks + hardlinks + other, filesDone: files,
                                                 bytesDone: bytes, totalBytes: expectedBytes.map { max($0, bytes) },
                                                 currentPath: PathBytes.display(path))))
    }
}
