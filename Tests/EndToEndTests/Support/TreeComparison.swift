import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Compares two directory trees byte for byte and by metadata: type, permissions,
/// owner, size, modification time to the nanosecond, symlink targets, hard-link
/// structure and an extended attribute.
enum TreeComparison {
    // MARK: Types

    /// The kinds of file system objects a tree can hold.
    enum Kind: String {
        case file, directory, symlink, fifo, socket, device, unknown

        init(mode: mode_t) {
            switch mode & S_IFMT {
            case S_IFREG: self = .file
            case S_IFDIR: self = .directory
            case S_IFLNK: self = .symlink
            case S_IFIFO: self = .fifo
            case S_IFSOCK: self = .socket
            case S_IFCHR, S_IFBLK: self = .device
            default: self = .unknown
            }
        }
    }

    /// What is recorded about one path of a tree.
    struct Entry {
        let absolutePath: [UInt8]
        let kind: Kind
        let permissions: UInt32
        let uid: UInt32
        let gid: UInt32
        let size: Int64
        let mtimeSeconds: Int
        let mtimeNanoseconds: Int
        let linkTarget: [UInt8]?
        let device: UInt64
        let inode: UInt64
        let linkCount: UInt64
        let blocks: Int64
        let xattr: [UInt8]?
    }

    /// Which aspects to compare.
    struct Options {
        /// Compare uid and gid.
        var ownership = true
        /// Compare modification times of folders (files, symlinks and fifos always).
        var directoryTimes = true
        /// Compare modification times of symlinks.
        var symlinkTimes = true
        /// Compare modification times to the nanosecond (else to the second, for formats
        /// that keep whole seconds only).
        var nanoseconds = true
        /// Extended attribute to compare, if any.
        var xattrName: String? = "user.test"
        /// Paths (relative) to leave out of the comparison, with everything below them.
        var ignoring: [[UInt8]] = []
        /// Leave out the root folder's own mode, owner and time (a restore target that
        /// existed before keeps its own).
        var ignoreRootMode = false
    }

    // MARK: Snapshots

    /// Every path below `root` (and `root` itself as the empty path), keyed by relative path.
    static func snapshot(of root: [UInt8], xattrName: String? = "user.test") throws -> [[UInt8]: Entry] {
        var entries: [[UInt8]: Entry] = [:]
        try walk(root, relative: [], xattrName: xattrName, into: &entries)
        return entries
    }

    /// `snapshot(of:)` for a string path.
    static func snapshot(of root: String, xattrName: String? = "user.test") throws -> [[UInt8]: Entry] {
        try snapshot(of: RawFileSystem.bytes(root), xattrName: xattrName)
    }

    private static func walk(_ path: [UInt8], relative: [UInt8], xattrName: String?, into entries: inout [[UInt8]: Entry]) throws {
        guard let info = RawFileSystem.lstat(path) else { throw RawFileSystem.Failure("lstat", path) }
        let kind = Kind(mode: info.st_mode)
        entries[relative] = Entry(
            absolutePath: path, kind: kind, permissions: UInt32(info.st_mode & 0o7777), uid: info.st_uid, gid: info.st_gid,
            size: Int64(info.st_size), mtimeSeconds: info.st_mtim.tv_sec, mtimeNanoseconds: info.st_mtim.tv_nsec,
            linkTarget: kind == .symlink ? RawFileSystem.readLink(path) : nil, device: UInt64(info.st_dev),
            inode: UInt64(info.st_ino), linkCount: UInt64(info.st_nlink), blocks: Int64(info.st_blocks),
            xattr: xattrName.flatMap { kind == .symlink ? nil : RawFileSystem.getXattr(path, name: $0) })
        guard kind == .directory else { return }
        for name in try RawFileSystem.listDirectory(path) {
            try walk(RawFileSystem.join(path, name), relative: RawFileSystem.join(relative, name), xattrName: xattrName,
                     into: &entries)
        }
    }

    // MARK: Comparing

    /// Every way `actual` differs from `expected`, one readable line each (empty when equal).
    static func differences(expected: [[UInt8]: Entry], actual: [[UInt8]: Entry], options: Options = Options()) throws -> [String] {
        func ignored(_ path: [UInt8]) -> Bool {
            options.ignoring.contains { prefix in
                path == prefix || (path.starts(with: prefix) && path.count > prefix.count && path[prefix.count] == UInt8(ascii: "/"))
            }
        }
        func name(_ path: [UInt8]) -> String { path.isEmpty ? "." : RawFileSystem.display(path) }
        var problems: [String] = []
        let paths = Set(expected.keys).union(actual.keys).filter { !ignored($0) }.sorted { $0.lexicographicallyPrecedes($1) }
        for path in paths where !(options.ignoreRootMode && path.isEmpty) {
            guard let want = expected[path] else {
                problems.append("\(name(path)): unexpected \(actual[path]!.kind.rawValue)")
                continue
            }
            guard let have = actual[path] else {
                problems.append("\(name(path)): missing (expected a \(want.kind.rawValue))")
                continue
            }
            guard want.kind == have.kind else {
                problems.append("\(name(path)): is a \(have.kind.rawValue), expected a \(want.kind.rawValue)")
                continue
            }
            if want.kind != .symlink && want.permissions != have.permissions {
                problems.append("\(name(path)): mode \(String(have.permissions, radix: 8)), expected \(String(want.permissions, radix: 8))")
            }
            if options.ownership && (want.uid != have.uid || want.gid != have.gid) {
                problems.append("\(name(path)): owner \(have.uid):\(have.gid), expected \(want.uid):\(want.gid)")
            }
            let checkTime: Bool
            switch want.kind {
            case .directory: checkTime = options.directoryTimes
            case .symlink: checkTime = options.symlinkTimes
            default: checkTime = true
            }
            let sameTime = want.mtimeSeconds == have.mtimeSeconds
                && (!options.nanoseconds || want.mtimeNanoseconds == have.mtimeNanoseconds)
            if checkTime && !sameTime {
                problems.append("\(name(path)): mtime \(have.mtimeSeconds).\(String(format: "%09d", have.mtimeNanoseconds)), "
                    + "expected \(want.mtimeSeconds).\(String(format: "%09d", want.mtimeNanoseconds))")
            }
            if want.kind == .symlink && want.linkTarget != have.linkTarget {
                problems.append("\(name(path)): symlink to '\(RawFileSystem.display(have.linkTarget ?? []))', "
                    + "expected '\(RawFileSystem.display(want.linkTarget ?? []))'")
            }
            if want.kind == .file {
                if want.size != have.size {
                    problems.append("\(name(path)): size \(have.size), expected \(want.size)")
                } else if try !RawFileSystem.filesEqual(want.absolutePath, have.absolutePath) {
                    problems.append("\(name(path)): content differs")
                }
            }
            if options.xattrName != nil && want.xattr != have.xattr {
                problems.append("\(name(path)): xattr \(options.xattrName ?? "") is \(have.xattr.map { "'\(RawFileSystem.display($0))'" } ?? "missing"), "
                    + "expected \(want.xattr.map { "'\(RawFileSystem.display($0))'" } ?? "none")")
            }
        }
        problems.append(contentsOf: hardLinkDifferences(expected: expected, actual: actual, ignored: ignored, name: name))
        return problems
    }

    /// Paths that share an inode in `expected` must share one in `actual`, and only those.
    private static func hardLinkDifferences(expected: [[UInt8]: Entry], actual: [[UInt8]: Entry],
                                            ignored: ([UInt8]) -> Bool, name: ([UInt8]) -> String) -> [String] {
        var groups: [UInt64: [[UInt8]]] = [:]
        for (path, entry) in expected where entry.kind == .file && !ignored(path) {
            groups[entry.inode, default: []].append(path)
        }
        var problems: [String] = []
        for (_, paths) in groups where paths.count > 1 {
            let inodes = Set(paths.compactMap { actual[$0]?.inode })
            if inodes.count != 1 {
                problems.append("hard links \(paths.map(name).sorted()) no longer share one inode")
            }
        }
        var actualGroups: [UInt64: [[UInt8]]] = [:]
        for (path, entry) in actual where entry.kind == .file && !ignored(path) {
            actualGroups[entry.inode, default: []].append(path)
        }
        for (_, paths) in actualGroups where paths.count > 1 {
            let inodes = Set(paths.compactMap { expected[$0]?.inode })
            if inodes.count > 1 {
                problems.append("\(paths.map(name).sorted()) share an inode but were separate files")
            }
        }
        return problems
    }
}
