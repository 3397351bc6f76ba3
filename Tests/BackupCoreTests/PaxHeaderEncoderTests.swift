import Foundation
import XCTest
@testable import BackupCore

/// Keepsake encodes pax headers itself; these tests hold it to the bytes libarchive 3.6's
/// pax writer produced for the same entries (the writer Keepsake used before), entry by
/// entry, and to the two places where it differs on purpose.
final class PaxHeaderEncoderTests: KeepsakeTestCase {
    // MARK: Byte for byte

    func testEdgeCasesEncodeAsLibarchiveDid() throws {
        try assertSameBytes(edgeCases())
    }

    func testRandomEntriesEncodeAsLibarchiveDid() throws {
        var random = SeededBytes(seed: 0x5eed_7a75)
        let samples = (0..<3000).map { _ in randomSample(&random) }
        try assertSameBytes(samples)
    }

    /// Sizes that need the size field's last byte, base 256 or a `size` record: the headers
    /// only (their content would be gigabytes).
    func testLargeSizesEncodeAsLibarchiveDid() throws {
        for size: Int64 in [(1 << 33) - 1, 1 << 33, (1 << 36) - 1, 1 << 36, 1 << 40, Int64.max / 2] {
            for regions: [ArchiveEntryHeader.SparseRegion] in [[], [.init(offset: 0, length: 10), .init(offset: size - 4096, length: 4096)]] {
                let header = ArchiveEntryHeader(path: Array("big/file".utf8), type: .file, size: size, mtimeSeconds: 1,
                                                sparseRegions: regions)
                let reference = try LibarchivePaxReference()
                try reference.writeHeader(header)
                var expected = reference.take()
                if !regions.isEmpty {
                    // libarchive writes a sparse map with the first content (here one byte of the
                    // first run, left out); ours comes with the header.
                    try reference.writeData([0])
                    expected += reference.take().dropLast()
                }
                reference.refuseFurtherOutput()
                var encoder = PaxHeaderEncoder()
                var encoded: [UInt8] = []
                _ = try encoder.encode(header, into: &encoded)
                if encoded != expected {
                    XCTFail("size \(size), \(regions.count) regions: \(firstDifference(encoded, expected))")
                }
            }
        }
    }

    // MARK: On purpose different

    /// A time between -1 and 0 seconds keeps its sign: libarchive wrote -0.5 s as "0.5".
    func testTimeJustBeforeTheEpochKeepsItsSign() throws {
        XCTAssertEqual(String(decoding: PaxHeaderEncoder.timeText(seconds: -1, nanoseconds: 500_000_000), as: UTF8.self), "-0.5")
        XCTAssertEqual(String(decoding: PaxHeaderEncoder.timeText(seconds: -100, nanoseconds: 250_000_000), as: UTF8.self), "-99.75")
        XCTAssertEqual(String(decoding: PaxHeaderEncoder.timeText(seconds: -3, nanoseconds: 0), as: UTF8.self), "-3")
        XCTAssertEqual(String(decoding: PaxHeaderEncoder.timeText(seconds: 7, nanoseconds: 1), as: UTF8.self), "7.000000001")
        let records = try recordsOf(ArchiveEntryHeader(path: Array("old".utf8), type: .file, mtimeSeconds: -1,
                                                       mtimeNanoseconds: 500_000_000))
        XCTAssertTrue(records.contains("14 mtime=-0.5\n"), records)
    }

    /// A name in CESU-8 (a surrogate pair as two three-byte sequences) is not UTF-8: it is
    /// stored as it is, marked binary, where libarchive rewrote it to UTF-8 (so the restored
    /// file had another name).
    func testCESU8NameIsStoredAsItIs() throws {
        let name = Array("cesu-".utf8) + [0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80]
        let records = try recordsOf(ArchiveEntryHeader(path: name, type: .file))
        XCTAssertTrue(records.hasPrefix("21 hdrcharset=BINARY\n"), records)
        var encoder = PaxHeaderEncoder()
        var encoded: [UInt8] = []
        _ = try encoder.encode(ArchiveEntryHeader(path: name, type: .file), into: &encoded)
        XCTAssertNotNil(encoded.firstRange(of: Array("path=".utf8) + name + [0x0a]), "the name's own bytes")
    }

    /// A sparse file whose name is not UTF-8 and is long keeps its name: libarchive wrote the
    /// shortened ustar name into `GNU.sparse.name`, which GNU tar and libarchive restore under.
    func testSparseFileKeepsANameThatIsNotUTF8() throws {
        let path = Array(String(repeating: "n", count: 110).utf8) + [0xff]
        let header = ArchiveEntryHeader(path: path, type: .file, size: 3000, sparseRegions: [.init(offset: 512, length: 100)])
        let records = try recordsOf(header)
        XCTAssertTrue(records.contains("GNU.sparse.name=" + String(repeating: "n", count: 110)), records)
        let (sink, writer) = try memoryWriter()
        try writer.writeHeader(header)
        try [UInt8](repeating: 1, count: 3000).withUnsafeBytes { try writer.writeData($0, path: path) }
        try writer.finish()
        let source = MemorySource(bytes: sink.bytes)
        let reader = try ArchiveReader(source: source, name: "sparse-name.tar")
        let read = try XCTUnwrap(try reader.nextHeader())
        XCTAssertEqual(read.path, path)
        XCTAssertEqual(try reader.readContent(limit: 1 << 20).filter { $0 != 0 }.count, 100)
    }

    // MARK: The writer around the encoder

    func testWriterRefusesWhatATarCannotHold() throws {
        let writer = try ArchiveWriter(sink: DiscardingSink(), compression: .none, level: nil, threads: 1)
        for (header, what) in [(ArchiveEntryHeader(path: Array("s".utf8), type: .socket), "socket"),
                               (ArchiveEntryHeader(path: [0x61, 0, 0x62], type: .file), "NUL in the name"),
                               (ArchiveEntryHeader(path: Array("l".utf8), type: .symlink, linkTarget: [0x61, 0]), "NUL in the target"),
                               (ArchiveEntryHeader(path: Array("h".utf8), type: .hardlink, linkTarget: []), "hard link to nothing"),
                               (ArchiveEntryHeader(path: [], type: .file), "no name")] {
            XCTAssertThrowsError(try writer.writeHeader(header), what) { error in
                guard case .write? = error as? ArchiveError else { return XCTFail("\(what): \(error)") }
            }
        }
    }

    func testWriterRefusesMoreContentThanTheHeaderSaid() throws {
        let writer = try ArchiveWriter(sink: DiscardingSink(), compression: .none, level: nil, threads: 1)
        try writer.writeHeader(ArchiveEntryHeader(path: Array("four".utf8), type: .file, size: 4))
        try [UInt8]("abc".utf8).withUnsafeBytes { try writer.writeData($0, path: Array("four".utf8)) }
        XCTAssertThrowsError(try [UInt8]("de".utf8).withUnsafeBytes { try writer.writeData($0, path: Array("four".utf8)) }) { error in
            XCTAssertTrue("\(error)".contains("four") && "\(error)".contains("4 bytes"), "\(error)")
        }
    }

    func testWriterRefusesEntriesAfterTheEnd() throws {
        let writer = try ArchiveWriter(sink: DiscardingSink(), compression: .none, level: nil, threads: 1)
        try writer.finish()
        XCTAssertThrowsError(try writer.writeHeader(ArchiveEntryHeader(path: Array("late".utf8), type: .file, size: 1))) { error in
            XCTAssertTrue("\(error)".contains("late"), "\(error)")
        }
        XCTAssertThrowsError(try [UInt8]("x".utf8).withUnsafeBytes { try writer.writeData($0, path: Array("late".utf8)) })
    }

    /// Content that stops short is stored as zeros to the size the header gave, as
    /// libarchive did, so the archive stays readable; the same for a sparse file's runs.
    func testContentThatStopsShortIsPaddedWithZeros() throws {
        let dense = ArchiveEntryHeader(path: Array("short".utf8), type: .file, size: 1000)
        let sparse = ArchiveEntryHeader(path: Array("holes".utf8), type: .file, size: 300_000,
                                        sparseRegions: [.init(offset: 100_000, length: 100), .init(offset: 299_990, length: 10)])
        for (header, written) in [(dense, 10), (sparse, 100_050), (sparse, 0)] {
            let reference = try LibarchivePaxReference()
            let (sink, writer) = try memoryWriter()
            let content = [UInt8](repeating: 0x41, count: written)
            try reference.writeHeader(header)
            try writer.writeHeader(header)
            if written > 0 {
                try reference.writeData(content)
                try content.withUnsafeBytes { try writer.writeData($0, path: header.path) }
            }
            try reference.finish()
            try writer.finish()
            if written > 0 {
                XCTAssertEqual(sink.bytes, reference.take(), "\(PathBytes.display(header.path)) after \(written) bytes")
            } else {
                // libarchive wrote a sparse map only with content, so its archive was short; ours has it.
                XCTAssertEqual(sink.bytes.count % 512, 0)
                XCTAssertGreaterThan(sink.bytes.count, reference.take().count)
            }
            XCTAssertEqual(writer.position, Int64(sink.bytes.count))
        }
    }

    // MARK: Comparing

    private typealias Sample = (header: ArchiveEntryHeader, content: [UInt8])

    /// Writes every sample through both writers and compares, entry by entry, then the end.
    private func assertSameBytes(_ samples: [Sample], file: StaticString = #filePath, line: UInt = #line) throws {
        let reference = try LibarchivePaxReference()
        let (sink, writer) = try memoryWriter()
        var mismatches = 0
        for (index, sample) in samples.enumerated() {
            try reference.writeHeader(sample.header)
            try reference.writeData(sample.content)
            try reference.finishEntry()
            try writer.writeHeader(sample.header)
            try sample.content.withUnsafeBytes { try writer.writeData($0, path: sample.header.path) }
            try writer.finishEntry()
            try writer.flush()
            let expected = reference.take()
            let actual = sink.take()
            if actual != expected {
                mismatches += 1
                if mismatches <= 5 {
                    XCTFail("entry \(index) \(describe(sample.header)): \(firstDifference(actual, expected))", file: file, line: line)
                }
            }
        }
        try reference.finish()
        try writer.finish()
        XCTAssertEqual(sink.take(), reference.take(), "end of archive", file: file, line: line)
        XCTAssertEqual(mismatches, 0, "entries that differ", file: file, line: line)
    }

    private func firstDifference(_ actual: [UInt8], _ expected: [UInt8]) -> String {
        let index = (0..<min(actual.count, expected.count)).first { actual[$0] != expected[$0] } ?? min(actual.count, expected.count)
        let around = { (bytes: [UInt8]) in
            String(decoding: bytes[max(0, index - 40)..<min(bytes.count, index + 40)].map { $0 == 0 ? UInt8(ascii: "~") : $0 },
                   as: UTF8.self)
        }
        return "\(actual.count) bytes against \(expected.count), first difference at \(index) (block \(index / 512), offset \(index % 512)):\n ours: \(around(actual))\n libarchive: \(around(expected))"
    }

    private func describe(_ header: ArchiveEntryHeader) -> String {
        "\(header.type) \(PathBytes.display(header.path)) (\(header.path.count) bytes) link \(header.linkTarget.map(PathBytes.display) ?? "-") size \(header.size) uid \(header.uid) gid \(header.gid) user \(header.userName ?? "-") group \(header.groupName ?? "-") mtime \(header.mtimeSeconds).\(header.mtimeNanoseconds) rdev \(header.rdev) xattrs \(header.xattrs.count) regions \(header.sparseRegions)"
    }

    private func recordsOf(_ header: ArchiveEntryHeader) throws -> String {
        var encoder = PaxHeaderEncoder()
        var encoded: [UInt8] = []
        _ = try encoder.encode(header, into: &encoded)
        guard encoded.count > 512, encoded[156] == UInt8(ascii: "x") else { return "" }
        return String(decoding: encoded[512..<(encoded.count - 512)].filter { $0 != 0 }, as: UTF8.self)
    }

    private func memoryWriter() throws -> (MemorySink, ArchiveWriter) {
        let sink = MemorySink()
        return (sink, try ArchiveWriter(sink: sink, compression: .none, level: nil, threads: 1))
    }

    // MARK: Samples

    private func edgeCases() -> [Sample] {
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

    private func randomSample(_ random: inout SeededBytes) -> Sample {
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
private struct SeededBytes {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func below(_ bound: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(bound))
    }
}

/// Keeps what is written, to compare.
private final class MemorySink: ByteSink {
    var bytes: [UInt8] = []

    func write(_ buffer: UnsafeRawBufferPointer) throws { bytes.append(contentsOf: buffer) }

    func take() -> [UInt8] {
        defer { bytes.removeAll() }
        return bytes
    }
}

/// Reads from bytes in memory.
private final class MemorySource: ByteSource {
    private let bytes: [UInt8]
    private var offset = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(buffer.count, bytes.count - offset)
        bytes[offset..<(offset + count)].withUnsafeBytes { buffer.copyMemory(from: $0) }
        offset += count
        return count
    }

    func close() {}
}

/// Drops what is written.
private final class DiscardingSink: ByteSink {
    func write(_ buffer: UnsafeRawBufferPointer) throws {}
}
