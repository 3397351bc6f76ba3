import Foundation
import KeepsakeModel
import KeepsakeSupport

/// Walks source trees depth-first in name order, on raw bytes through `openat`/`fstatat`
/// (FileManager turns undecodable names into U+FFFD and loses those files), applying
/// excludes, cache tags, markers and file-system boundaries.
public final class Scanner {
    // MARK: State

    private let options: ScanOptions
    private let cancellation: CancellationFlag
    private let warn: (PathWarning) -> Void
    /// Told of every path the scan leaves out, with the rule (`backup --dry-run --list`).
    public var leftOut: ((LeftOutPath) -> Void)?

    /// The 43 bytes a valid CACHEDIR.TAG starts with (bford.info/cachedir).
    private static let cacheTagSignature = Array("Signature: 8a477f597d28d172789f06886806bc55".utf8)

    /// One open directory being listed: its names in name order, and the statuses of the
    /// ones from `windowStart` on (read ahead a window at a time, in inode order: on a cold
    /// disk the inode tables are then read front to back rather than hopping with the names).
    private struct Frame {
        let fd: Int32
        let absolutePath: [UInt8]
        let relativePath: [UInt8]
        let names: [(name: [UInt8], inode: UInt64)]
        var index = 0
        var windowStart = 0
        var statuses: [Result<stat, Errno>] = []

        init(fd: Int32, absolutePath: [UInt8], relativePath: [UInt8], names: [(name: [UInt8], inode: UInt64)]) {
            self.fd = fd
            self.absolutePath = absolutePath
            self.relativePath = relativePath
            self.names = names
        }

        /// The name at `index` and its status, reading the next window when needed.
        mutating func next() -> (name: [UInt8], info: Result<stat, Errno>) {
            if index >= windowStart + statuses.count {
                windowStart = index
                let window = index..<min(names.count, index + Scanner.statusWindow)
                statuses = [Result<stat, Errno>](repeating: .failure(Errno(code: ENOENT)), count: window.count)
                for position in window.sorted(by: { names[$0].inode < names[$1].inode }) {
                    var info = stat()
                    statuses[position - windowStart] = PathBytes.syscall(names[position].name) {
                        fstatat(fd, $0, &info, AT_SYMLINK_NOFOLLOW)
                    } == 0 ? .success(info) : .failure(Errno(code: errno))
                }
            }
            defer { index += 1 }
            return (names[index].name, statuses[index - windowStart])
        }
    }

    /// Statuses read ahead per folder at most (a folder of a million files must not hold a
    /// million of them).
    static let statusWindow = 1024

    /// An errno from a failed call.
    private struct Errno: Error {
        let code: Int32
    }

    // MARK: Life cycle

    /// A scanner that reports unreadable paths through `warn`.
    public init(options: ScanOptions, cancellation: CancellationFlag, warn: @escaping (PathWarning) -> Void) {
        self.options = options
        self.cancellation = cancellation
        self.warn = warn
        Scanner.raiseOpenFileLimit()
    }

    /// Deep trees keep one descriptor open per level.
    private static func raiseOpenFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = min(limit.rlim_max, 1 << 16)
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    // MARK: Sources

    /// Makes a source path absolute without resolving its last component (a symlink given
    /// as a source is stored as a symlink, as tar does).
    public static func absoluteSourcePath(_ path: String) throws -> [UInt8] {
        try absoluteSourcePath(PathBytes.from(path))
    }

    /// `absoluteSourcePath` for a path given as bytes (it need not be UTF-8).
    public static func absoluteSourcePath(_ given: [UInt8]) throws -> [UInt8] {
        let path = PathBytes.display(given)
        guard !given.isEmpty else { throw ScanError.sourceUnusable(path: path, reason: "the path is empty") }
        var bytes = given
        while bytes.count > 1 && bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        let last = PathBytes.lastComponent(bytes)
        let resolveWhole = bytes == [UInt8(ascii: "/")] || last == Array("..".utf8) || last == Array(".".utf8)
            || !bytes.contains(UInt8(ascii: "/")) && (last == Array(".".utf8))
        func real(_ target: [UInt8]) throws -> [UInt8] {
            guard let resolved = try PathBytes.withCString(target, { realpath($0, nil) }) else {
                throw ScanError.sourceUnusable(path: path, reason: FileDescriptorIO.message(errno))
            }
            defer { free(resolved) }
            return PathBytes.fromCString(resolved) ?? target
        }
        if resolveWhole { return try real(bytes) }
        let parent: [UInt8]
        if let slash = bytes.lastIndex(of: UInt8(ascii: "/")) {
            parent = slash == 0 ? [UInt8(ascii: "/")] : Array(bytes[..<slash])
        } else {
            parent = [UInt8(ascii: ".")]
        }
        let resolvedParent = try real(parent)
        let absolute = PathBytes.join(resolvedParent, last)
        var info = stat()
        guard PathBytes.syscall(absolute, { lstat($0, &info) }) == 0 else {
            throw ScanError.sourceUnusable(path: path, reason: FileDescriptorIO.message(errno))
        }
        return absolute
    }

    /// Drops sources that lie inside another source, so nothing is stored twice.
    public static func withoutNestedSources(_ sources: [[UInt8]]) -> [[UInt8]] {
        var kept: [[UInt8]] = []
        // In scan order, so that the archive (and the manifest) are in `ScanOrder` throughout.
        for source in sources.sorted(by: ScanOrder.precedes) {
            if !kept.contains(where: { PathBytes.isSameOrBelow(source, $0) }) { kept.append(source) }
        }
        return kept
    }

    // MARK: Walking

    /// Visits `source` (absolute) and, for a directory, everything below it. The visitor
    /// sees each directory before its contents.
    public func scan(source: [UInt8], visit: (ScannedItem) throws -> Void) throws {
        let isRoot = source == [UInt8(ascii: "/")]
        let parentPath: [UInt8]
        let name: [UInt8]
        if isRoot {
            parentPath = source
            name = []
        } else {
            let slash = source.lastIndex(of: UInt8(ascii: "/")) ?? 0
            parentPath = slash == 0 ? [UInt8(ascii: "/")] : Array(source[..<slash])
            name = Array(source[(slash + 1)...])
        }
        let parentFD = PathBytes.syscall(parentPath) { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard parentFD >= 0 else {
            throw ScanError.sourceUnusable(path: PathBytes.display(source), reason: FileDescriptorIO.message(errno))
        }
        defer { close(parentFD) }
        var info = stat()
        if isRoot {
            guard fstat(parentFD, &info) == 0 else {
                throw ScanError.sourceUnusable(path: "/", reason: FileDescriptorIO.message(errno))
            }
            try walk(directoryFD: parentFD, absolutePath: source, rootDevice: info.st_dev, visit: visit, ownsFD: false)
            return
        }
        guard PathBytes.syscall(name, { fstatat(parentFD, $0, &info, AT_SYMLINK_NOFOLLOW) }) == 0 else {
            throw ScanError.sourceUnusable(path: PathBytes.display(source), reason: FileDescriptorIO.message(errno))
        }
        let item = ScannedItem(parentFD: parentFD, name: name, absolutePath: source,
                               archivePath: Array(source.drop(while: { $0 == UInt8(ascii: "/") })), info: info)
        try visit(item)
        guard item.type == .directory else { return }
        let fd = PathBytes.syscall(name) { openat(parentFD, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else {
            warn(PathWarning(kind: .unreadable, path: PathBytes.display(source), reason: FileDescriptorIO.message(errno)))
            return
        }
        if let rule = skippingRule(directoryFD: fd) {
            leftOut?(LeftOutPath(path: source, isDirectory: true, contentsOnly: true, rule: rule))
            try visitMarkers(directoryFD: fd, absolutePath: source, visit: visit)
            close(fd)
            return
        }
        try walk(directoryFD: fd, absolutePath: source, rootDevice: info.st_dev, visit: visit, ownsFD: true)
    }

    /// Depth-first over an open directory, with an explicit stack (deep trees must not
    /// overflow the call stack).
    private func walk(directoryFD: Int32, absolutePath: [UInt8], rootDevice: dev_t,
                      visit: (ScannedItem) throws -> Void, ownsFD: Bool) throws {
        var stack: [Frame] = [Frame(fd: directoryFD, absolutePath: absolutePath, relativePath: [],
                                    names: listNames(directoryFD, path: absolutePath))]
        defer {
            for (position, frame) in stack.enumerated() where position > 0 || ownsFD { close(frame.fd) }
        }
        while !stack.isEmpty {
            try cancellation.check()
            let top = stack.count - 1
            guard stack[top].index < stack[top].names.count else {
                let finished = stack.removeLast()
                if !stack.isEmpty || ownsFD { close(finished.fd) }
                continue
            }
            let (name, status) = stack[top].next()
            let frame = stack[top]
            let absolute = PathBytes.join(frame.absolutePath, name)
            let relative = PathBytes.join(frame.relativePath, name)
            let info: stat
            switch status {
            case .success(let found): info = found
            case .failure(let failure):
                // Vanished between listing and stat: nothing to back up, but say so.
                warn(PathWarning(kind: .unreadable, path: PathBytes.display(absolute), reason: FileDescriptorIO.message(failure.code)))
                continue
            }
            let isDirectory = info.st_mode & S_IFMT == S_IFDIR
            if isDirectory, !options.leftOutFolders.isEmpty, options.leftOutFolders.contains(FileIdentity(info)) {
                leftOut?(LeftOutPath(path: absolute, isDirectory: true, rule: .destination))
                continue
            }
            if !options.excludes.isEmpty,
               let pattern = options.excludes.excludingPattern(relativePath: relative, absolutePath: absolute, isDirectory: isDirectory) {
                leftOut?(LeftOutPath(path: absolute, isDirectory: isDirectory, rule: .pattern(pattern)))
                continue
            }
            let item = ScannedItem(parentFD: frame.fd, name: name, absolutePath: absolute,
                                   archivePath: Array(absolute.drop(while: { $0 == UInt8(ascii: "/") })), info: info)
            try visit(item)
            guard isDirectory else { continue }
            if options.oneFileSystem && info.st_dev != rootDevice {
                leftOut?(LeftOutPath(path: absolute, isDirectory: true, contentsOnly: true, rule: .otherFileSystem))
                continue
            }
            let fd = PathBytes.syscall(name) { openat(frame.fd, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
            guard fd >= 0 else {
                warn(PathWarning(kind: .unreadable, path: PathBytes.display(absolute), reason: FileDescriptorIO.message(errno)))
                continue
            }
            if let rule = skippingRule(directoryFD: fd) {
                leftOut?(LeftOutPath(path: absolute, isDirectory: true, contentsOnly: true, rule: rule))
                try visitMarkers(directoryFD: fd, absolutePath: absolute, visit: visit)
                close(fd)
                continue
            }
            stack.append(Frame(fd: fd, absolutePath: absolute, relativePath: relative,
                               names: listNames(fd, path: absolute)))
        }
    }

    // MARK: Markers

    /// The cache tag or marker file that says to leave this directory's contents out; nil
    /// when none does.
    private func skippingRule(directoryFD: Int32) -> LeftOutPath.Rule? {
        if options.excludeCaches && hasValidCacheTag(directoryFD) { return .cacheTag }
        for marker in options.excludeIfPresent {
            var info = stat()
            if fstatat(directoryFD, marker, &info, AT_SYMLINK_NOFOLLOW) == 0 { return .marker(marker) }
        }
        return nil
    }

    /// The marker files themselves are kept so a restored directory stays marked.
    private func visitMarkers(directoryFD: Int32, absolutePath: [UInt8], visit: (ScannedItem) throws -> Void) throws {
        var markers: [String] = []
        if options.excludeCaches && hasValidCacheTag(directoryFD) { markers.append("CACHEDIR.TAG") }
        markers.append(contentsOf: options.excludeIfPresent)
        for marker in Set(markers).sorted() {
            var info = stat()
            guard fstatat(directoryFD, marker, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            let absolute = PathBytes.join(absolutePath, PathBytes.from(marker))
            try visit(ScannedItem(parentFD: directoryFD, name: PathBytes.from(marker), absolutePath: absolute,
                                  archivePath: Array(absolute.drop(while: { $0 == UInt8(ascii: "/") })), info: info))
        }
    }

    private func hasValidCacheTag(_ directoryFD: Int32) -> Bool {
        let fd = openat(directoryFD, "CACHEDIR.TAG", O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: Scanner.cacheTagSignature.count)
        let count = buffer.withUnsafeMutableBytes { FileDescriptorIO.readFully(fd, $0) }
        return count == buffer.count && buffer == Scanner.cacheTagSignature
    }

    // MARK: Listing

    /// The names in a directory, sorted bytewise so archives are reproducible, with their
    /// inode numbers.
    private func listNames(_ fd: Int32, path: [UInt8]) -> [(name: [UInt8], inode: UInt64)] {
        let copy = dup(fd)
        guard copy >= 0, let directory = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            warn(PathWarning(kind: .unreadable, path: PathBytes.display(path), reason: FileDescriptorIO.message(errno)))
            return []
        }
        defer { closedir(directory) }
        var names: [(name: [UInt8], inode: UInt64)] = []
        errno = 0
        while let entry = readdir(directory) {
            let name = PathBytes.name(of: entry)
            if name.isEmpty || name == [46] || name == [46, 46] { continue }
            names.append((name, UInt64(entry.pointee.d_ino)))
        }
        if errno != 0 {
            warn(PathWarning(kind: .unreadable, path: PathBytes.display(path), reason: FileDescriptorIO.message(errno)))
        }
        return names.sorted { $0.name.lexicographicallyPrecedes($1.name) }
    }
}
