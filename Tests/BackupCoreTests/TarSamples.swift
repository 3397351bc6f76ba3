import Foundation
@testable import KeepsakeArchive
import KeepsakeSupport

@testable import BackupCore

/// Tar entries for the tests of Keepsake's tar writer and reader: chosen edge cases and
/// random ones, each with the content it carries.
enum TarSamples {
    /// A header and its content.
    typealias Sample = (header: ArchiveEntryHeader, content: [UInt8])


    /// Entries at every edge of the format: name lengths around the ustar limits, odd
    /// folder names, names that are not UTF-8, owners, modes, times, devices, xattrs, sparse runs.
    static func edgeCases() -> [Sample] {
        var samples: [Sample] = []
        func add(_ header: ArchiveEntryHeader, content: [UInt8]? = nil) {
            samples.append((header, content ?? [UInt8](repeating: 0x61, count: header.type == .file ? Int(header.size) : 0)))
        }
        let long = { (count: Int) in Array(String(repeating: "abcdefghi/", count: count / 10 + 1).utf8.prefix(count)) }
        // Name lengths around the ustar limits, with and without folders to split at.
        for count in [1, 98, 99, 100, 101, 102, 154, 155, 156, 157, 200, 255, 256, 257, 300, 1000] {
            add(ArchiveEntryHeader(path: long(count), type: .file, size: 3, mtimeSeconds: 1_700_000_000))
            add(ArchiveEntryHeader(path: long(count), type: .directory, permissions: 0o755))
            add(ArchiveEntryHeader(path: Array(String(repeating: "x", count: count).utf8), type: .file, size: 1))
            add(ArchiveEntryHeader(path: Array(String(repeating: "x", count: count).utf8), type: .directory))
            add(ArchiveEntryHeader(path: Array(("/" + String(repeating: "y", count: count)).utf8), type: .file))
            add(ArchiveEntryHeader(path: Array((String(repeating: "y", count: count) + "/z").utf8), type: .file))
            add(ArchiveEntryHeader(path: Array((String(repeating: "é", count: count / 2) + "/f").utf8), type: .file))
            add(ArchiveEntryHeader(path: Array("l".utf8), type: .symlink, linkTarget: long(count)))
            add(ArchiveEntryHeader(path: Array("h".utf8), type: .hardlink, linkTarget: long(count)))
            add(ArchiveEntryHeader(path: long(count), type: .file, size: 700_000,
                                   sparseRegions: [.init(offset: 4096, length: 4096), .init(offset: 600_000, length: 100)]))
        }
        // Folder names that end oddly, and dots.
        for name in [".", "./", "a/.", "a/./", "a//", "./a", "..", "a/..", "-", " ", "\\", "a=b", "%"] {
            add(ArchiveEntryHeader(path: Array(name.utf8), type: .directory))
            add(ArchiveEntryHeader(path: Array((name + String(repeating: "q", count: 120)).utf8), type: .directory))
        }
        // Names that are not ASCII, or not UTF-8.
        for name: [UInt8] in [Array("ünï/naïve".utf8), [0xff, 0xfe], Array("bad/".utf8) + [0xc3, 0x28], [0xe0, 0x80, 0x80],
                              [0xf4, 0x90, 0x80, 0x80], [0xed, 0xa0, 0x80], [0xc0, 0xaf], Array("日本語/ファイル".utf8), [0x80]] {
            add(ArchiveEntryHeader(path: name, type: .file, size: 2))
            add(ArchiveEntryHeader(path: Array("link".utf8), type: .symlink, linkTarget: name))
            add(ArchiveEntryHeader(path: Array("hard".utf8), type: .hardlink, linkTarget: name))
            add(ArchiveEntryHeader(path: name + Array(String(repeating: "/deep", count: 40).utf8), type: .directory))
        }
        // Owners.
        for id: UInt32 in [0, 1, 0o777777, 1 << 18, 0o7777777, 0o77777777, 1 << 24, UInt32.max] {
            add(ArchiveEntryHeader(path: Array("owned".utf8), type: .file, uid: id, gid: id))
        }
        for name in ["", "a", String(repeating: "u", count: 31), String(repeating: "u", count: 32), String(repeating: "u", count: 40),
                     "ünï", "名前"] {
            add(ArchiveEntryHeader(path: Array("named".utf8), type: .file, userName: name, groupName: name))
            add(ArchiveEntryHeader(path: Array("user-only".utf8), type: .file, userName: name))
        }
        // Modes, times, devices.
        for mode: UInt32 in [0, 0o7777, 0o4755, 0o2644, 0o1777, 0o777] {
            add(ArchiveEntryHeader(path: Array("mode".utf8), type: .file, permissions: mode))
        }
        for (seconds, nanoseconds): (Int64, Int32) in [(0, 0), (0, 1), (1, 999_999_999), (-2, 0), (-2, 1), (-100, 250_000_000),
                                                       (0x7fff_fffe, 0), (0x7fff_ffff, 0), (1 << 33, 0), (1 << 40, 5),
                                                       (-(1 << 40), 0), (8_589_934_591, 0), (8_589_934_592, 0)] {
            add(ArchiveEntryHeader(path: Array("time".utf8), type: .file, mtimeSeconds: seconds, mtimeNanoseconds: nanoseconds))
        }
        for rdev: UInt64 in [0, 0x0801, 0xffff, 0xfff_ffff, (1 << 20) << 8, (UInt64(1 << 18) << 32) | 5, 0xffff_ffff_ffff_ffff,
                             (0xfff << 8) | 0xff, UInt64(1 << 18) << 12] {
            add(ArchiveEntryHeader(path: Array("dev/b".utf8), type: .blockDevice, rdev: rdev))
            add(ArchiveEntryHeader(path: Array("dev/c".utf8), type: .characterDevice, rdev: rdev))
        }
        add(ArchiveEntryHeader(path: Array("fifo".utf8), type: .fifo, permissions: 0o600))
        // Extended attributes.
        add(ArchiveEntryHeader(path: Array("attrs".utf8), type: .file, size: 1,
                               xattrs: [.init(name: "user.a", value: []), .init(name: "user.b=c%d e", value: [0, 1, 2, 255]),
                                        .init(name: "user.ünï", value: Array("v".utf8)),
                                        .init(name: "security.selinux", value: Array("system_u:object_r:etc_t:s0\0".utf8)),
                                        .init(name: "user.big", value: [UInt8](repeating: 0x7a, count: 5000))]))
        // Sparse runs: dense after all, one run, touching runs, runs past the end, all hole.
        let size: Int64 = 1 << 20
        for regions: [ArchiveEntryHeader.SparseRegion] in [
            [.init(offset: 0, length: size)], [.init(offset: 0, length: 4096)], [.init(offset: 4096, length: size - 4096)],
            [.init(offset: 0, length: 4096), .init(offset: 4096, length: 4096)], [.init(offset: size, length: 0)],
            [.init(offset: 0, length: 10), .init(offset: 5, length: 10), .init(offset: 100, length: size)],
            [.init(offset: -1, length: 10), .init(offset: 8192, length: 1)], [.init(offset: 0, length: 0)],
            [.init(offset: 8192, length: 0), .init(offset: 8192, length: 512)],
            (0..<40).map { .init(offset: Int64($0) * 20_000, length: 1000) },
        ] {
            var content = [UInt8](repeating: 0, count: Int(size))
            for region in regions where region.offset >= 0 && region.offset < size {
                for index in Int(region.offset)..<Int(min(size, region.offset + region.length)) { content[index] = 0x53 }
            }
            add(ArchiveEntryHeader(path: Array("sparse".utf8), type: .file, size: size, sparseRegions: regions), content: content)
        }
        add(ArchiveEntryHeader(path: Array("empty-sparse".utf8), type: .file, size: 0, sparseRegions: [.init(offset: 0, length: 0)]))
        return samples
    }

    /// One entry of any type with random names, owners, times, xattrs and content.
    static func randomSample(_ random: inout SeededBytes) -> Sample {
        let types: [EntryType] = [.file, .file, .file, .directory, .symlink, .hardlink, .fifo, .characterDevice, .blockDevice]
        let type = types[random.below(types.count)]
        func name(_ length: Int) -> [UInt8] {
            let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789._- /=%".utf8) + [0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xff, 0x80]
            return (0..<length).map { _ in
                let byte = alphabet[random.below(alphabet.count)]
                return byte == 0 ? UInt8(ascii: "n") : byte
            }
        }
        let lengths = [1, 5, 20, 60, 99, 100, 101, 120, 155, 156, 180, 260, 400]
        var path = name(lengths[random.below(lengths.count)])
        if path.first == UInt8(ascii: "/") { path[0] = UInt8(ascii: "r") }
        let size: Int64 = type == .file ? Int64(random.below(3) == 0 ? 0 : random.below(5000)) : 0
        var regions: [ArchiveEntryHeader.SparseRegion] = []
        // Sparse files with names that are not UTF-8 differ on purpose (testSparseFileKeepsANameThatIsNotUTF8).
        if type == .file, size > 2000, random.below(3) == 0, String(validating: path, as: UTF8.self) != nil {
            regions = [.init(offset: 512, length: 100), .init(offset: size - 300, length: Int64(random.below(300)))]
        }
        let ids: [UInt32] = [0, 1000, 65_534, 262_143, 262_144, 2_097_151, 2_097_152, 16_777_216, 4_000_000_000]
        let users: [String?] = [nil, "root", "ana", "名前", String(repeating: "long", count: 9)]
        let times: [Int64] = [0, 1, 1_700_000_000, 0x7fff_ffff, -5, 1 << 34]
        let xattrCount = random.below(4) == 0 ? random.below(3) + 1 : 0
        let header = ArchiveEntryHeader(
            path: path, type: type, size: size, permissions: UInt32(random.below(0o10000)),
            uid: ids[random.below(ids.count)], gid: ids[random.below(ids.count)],
            userName: users[random.below(users.count)], groupName: users[random.below(users.count)],
            mtimeSeconds: times[random.below(times.count)],
            mtimeNanoseconds: random.below(2) == 0 ? 0 : Int32(random.below(1_000_000_000)),
            linkTarget: type == .symlink || type == .hardlink ? name(lengths[random.below(lengths.count)]) : nil,
            rdev: UInt64(random.below(1 << 30)) << UInt64(random.below(30)),
            xattrs: (0..<xattrCount).map { .init(name: "user.x\($0)", value: name(random.below(200))) },
            sparseRegions: regions)
        let content = (0..<Int(size)).map { _ in UInt8(truncatingIfNeeded: random.below(256)) }
        return (header, content)
    }
}

// MARK: - Helpers

/// A deterministic stream of numbers for reproducible samples.
struct SeededBytes {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func below(_ bound: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(bound))
    }
}

/// Keeps what is written, to compare.
final class InMemorySink: ByteSink {
    var bytes: [UInt8] = []

    func write(_ buffer: UnsafeRawBufferPointer) throws { bytes.append(contentsOf: buffer) }

    func take() -> [UInt8] {
        defer { bytes.removeAll() }
        return bytes
    }
}

/// Reads from bytes in memory.
final class InMemorySource: ByteSource {
    private let bytes: [UInt8]
    private var offset = 0
    /// The most one read hands out.
    private let piece: Int

    init(bytes: [UInt8], piece: Int = .max) {
        self.bytes = bytes
        self.piece = piece
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(buffer.count, piece, bytes.count - offset)
        bytes[offset..<(offset + count)].withUnsafeBytes { buffer.copyMemory(from: $0) }
        offset += count
        return count
    }

    func close() {}
}

/// Drops what is written.
final class DiscardingSink: ByteSink {
    func write(_ buffer: UnsafeRawBufferPointer) throws {}
}
