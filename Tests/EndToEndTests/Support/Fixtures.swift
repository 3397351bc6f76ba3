import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Builds the trees and files the tests back up, and damages archives on purpose.
enum Fixtures {
    // MARK: The awkward tree

    /// What `makeAwkwardTree` made, with the notable paths relative to its root.
    struct AwkwardTree {
        /// The tree's root (absolute).
        let root: String
        /// The 64 MiB sparse file.
        let sparseFile: [UInt8]
        /// The three names of one hard-linked file (in two folders).
        let hardLinks: [[UInt8]]
        /// The file carrying `user.test`.
        let xattrFile: [UInt8]
        /// The value of `user.test`.
        let xattrValue: [UInt8]
        /// False when the file system refused a user xattr.
        let xattrSupported: Bool
        /// The file whose full path is longer than 255 bytes.
        let longPath: [UInt8]
        /// The names that are not plain printable UTF-8 (newline, byte 0xff).
        let awkwardNames: [[UInt8]]
    }

    /// A name holding a newline.
    static let newlineName: [UInt8] = Array("new\nline.txt".utf8)
    /// A name holding the byte 0xff, which is not UTF-8.
    static let invalidUTF8Name: [UInt8] = Array("bad".utf8) + [0xff] + Array(".txt".utf8)

    /// Makes a tree with every awkward thing a backup must keep: files of several sizes
    /// (empty to > 1 MiB), nested and empty folders, relative, absolute and dangling
    /// symlinks, a hard-linked pair, a fifo, names with spaces, a newline, Korean, emoji
    /// and an invalid UTF-8 byte, a path over 255 bytes, a sparse file, an xattr, modes
    /// 0600/0700/0755 and modification times with nanoseconds.
    static func makeAwkwardTree(at root: String) throws -> AwkwardTree {
        let base = RawFileSystem.bytes(root)
        func at(_ relative: String) -> [UInt8] { RawFileSystem.join(base, relative) }
        try RawFileSystem.makeDirectory(base)

        // Regular files of several sizes.
        try RawFileSystem.writeFile(at("empty.txt"), contents: [])
        try RawFileSystem.writeFile(at("small.txt"), contents: Array("hello, keepsake\n".utf8))
        try RawFileSystem.writeFile(at("medium.bin"), contents: pseudoRandomBytes(count: 100_000, seed: 1))
        try RawFileSystem.writeFile(at("large.bin"), contents: pseudoRandomBytes(count: 1_572_864 + 17, seed: 2))
        try RawFileSystem.writeFile(at("compressible.txt"),
                                    contents: Array(String(repeating: "the same line again\n", count: 20_000).utf8))

        // Nested and empty folders.
        try RawFileSystem.makeDirectory(at("nested/a/b/c"))
        try RawFileSystem.writeFile(at("nested/a/b/c/deep.txt"), contents: Array("deep\n".utf8))
        try RawFileSystem.writeFile(at("nested/a/mid.txt"), contents: Array("mid\n".utf8))
        try RawFileSystem.makeDirectory(at("nested/empty-inner"))
        try RawFileSystem.makeDirectory(at("empty-dir"))

        // Symlinks.
        try RawFileSystem.makeDirectory(at("links"))
        try RawFileSystem.makeSymlink(at("links/relative"), target: Array("../small.txt".utf8))
        try RawFileSystem.makeSymlink(at("links/absolute"), target: at("small.txt"))
        try RawFileSystem.makeSymlink(at("links/dangling"), target: Array("does/not/exist".utf8))
        try RawFileSystem.makeSymlink(at("links/to-dir"), target: Array("../nested".utf8))

        // A hard-linked pair.
        try RawFileSystem.makeDirectory(at("hard"))
        try RawFileSystem.writeFile(at("hard/one.txt"), contents: pseudoRandomBytes(count: 5000, seed: 3))
        try RawFileSystem.makeHardLink(at("hard/two.txt"), to: at("hard/one.txt"))
        try RawFileSystem.makeHardLink(at("nested/third-name.txt"), to: at("hard/one.txt"))

        // A fifo.
        try RawFileSystem.makeDirectory(at("special"))
        try RawFileSystem.makeFifo(at("special/pipe"), mode: 0o640)

        // Awkward names.
        try RawFileSystem.makeDirectory(at("names"))
        try RawFileSystem.writeFile(at("names/with space.txt"), contents: Array("space\n".utf8))
        try RawFileSystem.writeFile(RawFileSystem.join(at("names"), newlineName), contents: Array("newline\n".utf8))
        try RawFileSystem.writeFile(at("names/사진_백업.txt"), contents: Array("사진\n".utf8))
        try RawFileSystem.writeFile(at("names/emoji_😀🎉.txt"), contents: Array("emoji\n".utf8))
        try RawFileSystem.writeFile(RawFileSystem.join(at("names"), invalidUTF8Name), contents: Array("invalid\n".utf8))
        try RawFileSystem.writeFile(at("names/back\\slash.txt"), contents: Array("backslash\n".utf8))
        try RawFileSystem.writeFile(at("names/tab\tname.txt"), contents: Array("tab\n".utf8))
        try RawFileSystem.writeFile(at("names/-rf"), contents: Array("dash\n".utf8))
        try RawFileSystem.writeFile(at("names/.hidden"), contents: Array("hidden\n".utf8))
        // A folder of the user's that happens to share the name of Keepsake's metadata folder.
        try RawFileSystem.makeDirectory(at(".keepsake"))
        try RawFileSystem.writeFile(at(".keepsake/manifest.jsonl"), contents: Array("not ours\n".utf8))
        try RawFileSystem.makeDirectory(at("names/folder with space/폴더"))
        try RawFileSystem.writeFile(at("names/folder with space/폴더/안녕.txt"), contents: Array("inside\n".utf8))

        // A path longer than 255 bytes in total.
        var long = "long"
        for level in 0..<5 {
            long += "/" + String(repeating: Character(UnicodeScalar(UInt8(ascii: "a") + UInt8(level))), count: 60)
        }
        try RawFileSystem.makeDirectory(at(long))
        let longFile = long + "/" + String(repeating: "f", count: 40) + ".txt"
        try RawFileSystem.writeFile(at(longFile), contents: Array("far down\n".utf8))

        // A sparse file: 64 MiB with a little data at two offsets.
        let sparse = "sparse.img"
        try RawFileSystem.writeSparseFile(at(sparse), size: 64 << 20, chunks: [
            (offset: 1 << 20, bytes: Array("first island of data".utf8)),
            (offset: 40 << 20, bytes: pseudoRandomBytes(count: 4096, seed: 4)),
        ])

        // An extended attribute.
        let xattrValue = Array("kept with the file".utf8)
        try RawFileSystem.writeFile(at("xattr.txt"), contents: Array("has an attribute\n".utf8))
        let xattrSupported = RawFileSystem.setXattr(at("xattr.txt"), name: "user.test", value: xattrValue) == 0

        // Modes.
        try RawFileSystem.writeFile(at("private.txt"), contents: Array("secret\n".utf8), mode: 0o600)
        try RawFileSystem.writeFile(at("script.sh"), contents: Array("#!/bin/sh\necho hi\n".utf8), mode: 0o755)
        try RawFileSystem.makeDirectory(at("private-dir"), mode: 0o700)
        try RawFileSystem.writeFile(at("private-dir/inside.txt"), contents: Array("x\n".utf8), mode: 0o640)

        // Another owner and a setuid bit (root only; the restore keeps owners for root).
        if geteuid() == 0 {
            try RawFileSystem.writeFile(at("owned-by-nobody.txt"), contents: Array("theirs\n".utf8))
            try RawFileSystem.setOwner(at("owned-by-nobody.txt"), uid: 65534, gid: 65534)
            try RawFileSystem.writeFile(at("setuid-tool"), contents: Array("#!/bin/sh\n".utf8))
            try RawFileSystem.setOwner(at("setuid-tool"), uid: 65534, gid: 65534)
            try RawFileSystem.setMode(at("setuid-tool"), 0o4755)
        }

        try stampTimes(root: base)
        try RawFileSystem.setModificationTime(base, seconds: 1_650_000_000, nanoseconds: 999_999_999)
        return AwkwardTree(root: root, sparseFile: Array(sparse.utf8),
                           hardLinks: [Array("hard/one.txt".utf8), Array("hard/two.txt".utf8), Array("nested/third-name.txt".utf8)],
                           xattrFile: Array("xattr.txt".utf8), xattrValue: xattrValue, xattrSupported: xattrSupported,
                           longPath: Array(longFile.utf8),
                           awkwardNames: [Array("names/".utf8) + newlineName, Array("names/".utf8) + invalidUTF8Name])
    }

    /// Gives every path below `root` (and `root`) a distinct modification time with
    /// nanoseconds; folders last and deepest first, so setting them disturbs nothing.
    static func stampTimes(root: [UInt8]) throws {
        let entries = try TreeComparison.snapshot(of: root, xattrName: nil)
        let ordered = entries.sorted { left, right in
            let leftIsFolder = left.value.kind == .directory, rightIsFolder = right.value.kind == .directory
            if leftIsFolder != rightIsFolder { return !leftIsFolder }
            let leftDepth = left.key.filter { $0 == UInt8(ascii: "/") }.count + (left.key.isEmpty ? 0 : 1)
            let rightDepth = right.key.filter { $0 == UInt8(ascii: "/") }.count + (right.key.isEmpty ? 0 : 1)
            if leftDepth != rightDepth { return leftDepth > rightDepth }
            return left.key.lexicographicallyPrecedes(right.key)
        }
        for (index, entry) in ordered.enumerated() {
            try RawFileSystem.setModificationTime(entry.value.absolutePath, seconds: 1_600_000_000 + index * 3_601,
                                                  nanoseconds: (123_456_789 + index * 1_000_003) % 1_000_000_000)
        }
    }

    // MARK: Simple trees

    /// Writes `files` (relative path → content) below `root`, making folders on the way.
    static func makeTree(at root: String, files: [String: String]) throws {
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(root))
        for (relative, content) in files {
            let path = RawFileSystem.bytes(root + "/" + relative)
            if let slash = path.lastIndex(of: UInt8(ascii: "/")) {
                try RawFileSystem.makeDirectory(Array(path[..<slash]))
            }
            try RawFileSystem.writeFile(path, contents: Array(content.utf8))
        }
    }

    /// A modest tree of everyday things: nested and empty folders, a symlink, a hard-linked
    /// pair, names with spaces and Korean, modes 0600 and 0755, nanosecond times.
    static func makeMixedTree(at root: String) throws {
        try makeTree(at: root, files: [
            "readme.txt": "read me\n",
            "docs/report final.txt": String(repeating: "quarterly numbers\n", count: 500),
            "docs/사진_백업.txt": "사진\n",
            "docs/deeper/notes.md": "# notes\n",
        ])
        let base = RawFileSystem.bytes(root)
        try RawFileSystem.writeFile(RawFileSystem.join(base, "data.bin"), contents: pseudoRandomBytes(count: 70_000, seed: 6))
        try RawFileSystem.writeFile(RawFileSystem.join(base, "secret.txt"), contents: Array("shh\n".utf8), mode: 0o600)
        try RawFileSystem.writeFile(RawFileSystem.join(base, "run.sh"), contents: Array("#!/bin/sh\n".utf8), mode: 0o755)
        try RawFileSystem.makeDirectory(RawFileSystem.join(base, "empty"))
        try RawFileSystem.makeSymlink(RawFileSystem.join(base, "docs/latest"), target: Array("report final.txt".utf8))
        try RawFileSystem.makeHardLink(RawFileSystem.join(base, "data-copy.bin"), to: RawFileSystem.join(base, "data.bin"))
        try stampTimes(root: base)
    }

    /// Writes `count` files of incompressible content (`size` bytes each) below `root`.
    static func makeIncompressibleTree(at root: String, count: Int, size: Int) throws {
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(root))
        for index in 0..<count {
            try RawFileSystem.writeFile(RawFileSystem.bytes(root + "/file-\(index).bin"),
                                        contents: pseudoRandomBytes(count: size, seed: UInt64(100 + index)))
        }
    }

    // MARK: Content

    /// Deterministic incompressible bytes (xorshift64*), fast even in debug builds.
    static func pseudoRandomBytes(count: Int, seed: UInt64) -> [UInt8] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        let words = (count + 7) / 8
        var bytes = [UInt8](repeating: 0, count: words * 8)
        bytes.withUnsafeMutableBytes { raw in
            let buffer = raw.bindMemory(to: UInt64.self)
            for index in 0..<words {
                state ^= state >> 12
                state ^= state << 25
                state ^= state >> 27
                buffer[index] = state &* 0x2545_F491_4F6C_DD1D
            }
        }
        bytes.removeLast(words * 8 - count)
        return bytes
    }

    // MARK: Damage

    /// Inverts one byte of the file at `path` at `offset` (the middle when nil).
    static func flipByte(in path: String, at offset: Int? = nil) throws {
        let bytes = RawFileSystem.bytes(path)
        guard let info = RawFileSystem.lstat(bytes) else { throw RawFileSystem.Failure("lstat", bytes) }
        let position = offset ?? Int(info.st_size) / 2
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw RawFileSystem.Failure("open", bytes) }
        defer { close(fd) }
        var byte: UInt8 = 0
        guard pread(fd, &byte, 1, off_t(position)) == 1 else { throw RawFileSystem.Failure("pread", bytes) }
        byte ^= 0xff
        guard pwrite(fd, &byte, 1, off_t(position)) == 1 else { throw RawFileSystem.Failure("pwrite", bytes) }
    }

    /// Cuts the file at `path` down to `fraction` of its size.
    static func truncate(_ path: String, toFraction fraction: Double) throws {
        let bytes = RawFileSystem.bytes(path)
        guard let info = RawFileSystem.lstat(bytes) else { throw RawFileSystem.Failure("lstat", bytes) }
        guard Glibc.truncate(path, off_t(Double(info.st_size) * fraction)) == 0 else {
            throw RawFileSystem.Failure("truncate", bytes)
        }
    }
}
