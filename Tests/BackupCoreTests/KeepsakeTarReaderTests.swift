import Foundation
@testable import KeepsakeArchive
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// Keepsake reads the archives it writes with a tar reader of its own. These tests hold it to
/// what libarchive's reader (which read them before, and still reads every other tar) gives
/// for the same archives, entry by entry and byte by byte, and to refusing, as damage, every
/// way the bytes can be wrong.
final class KeepsakeTarReaderTests: KeepsakeTestCase {
    // MARK: As libarchive read them

    func testEdgeCasesReadAsLibarchiveReadThem() throws {
        try assertSameAsLibarchive(TarSamples.edgeCases().filter(libarchiveReadsIt))
    }

    func testRandomEntriesReadAsLibarchiveReadThem() throws {
        var random = SeededBytes(seed: 0x7ead_5eed)
        try assertSameAsLibarchive((0..<3000).map { _ in TarSamples.randomSample(&random) }.filter(libarchiveReadsIt))
    }

    /// A file whose name ends in `/` (which no backup stores: a scan never names a file so)
    /// is a folder to both readers; libarchive then read its content as the next header, and
    /// failed. Keepsake's reader passes over the content and reads on.
    func testAFileNamedLikeAFolderIsAFolderWhoseContentIsPassedOver() throws {
        let archive = try write([
            (ArchiveEntryHeader(path: Array("odd/".utf8), type: .file, size: 600), [UInt8](repeating: 0x61, count: 600)),
            (ArchiveEntryHeader(path: Array("sparse/".utf8), type: .file, size: 100_000, sparseRegions: [.init(offset: 512, length: 512)]),
             [UInt8](repeating: 0, count: 512) + [UInt8](repeating: 0x62, count: 512) + [UInt8](repeating: 0, count: 100_000 - 1024)),
            (ArchiveEntryHeader(path: Array("next".utf8), type: .file, size: 2), [0x63, 0x64]),
        ])
        let entries = try readAll(archive, parser: .keepsake)
        XCTAssertEqual(entries.map(\.header.path), [Array("odd".utf8), Array("sparse".utf8), Array("next".utf8)])
        XCTAssertEqual(entries.map(\.header.type), [.directory, .directory, .file])
        XCTAssertEqual(entries.map(\.header.size), [0, 0, 2])
        XCTAssertEqual(entries[2].content, [0x63, 0x64])
        XCTAssertThrowsError(try readAll(archive, parser: .libarchive))
    }

    /// The same archive read in pieces of every awkward size: headers, records and sparse maps
    /// that span two reads are put together.
    func testPiecesOfAnySizeReadTheSame() throws {
        var random = SeededBytes(seed: 0x9135)
        let samples = TarSamples.edgeCases().prefix(120) + (0..<200).map { _ in TarSamples.randomSample(&random) }
        let archive = try write(Array(samples))
        let whole = try readAll(archive, parser: .keepsake)
        for piece in [1, 7, 100, 511, 513, 4096] {
            let pieces = try readAll(archive, parser: .keepsake, piece: piece)
            XCTAssertEqual(pieces.count, whole.count, "pieces of \(piece) bytes")
            for (index, (mine, reference)) in zip(pieces, whole).enumerated()
            where mine.header != reference.header || mine.content != reference.content {
                XCTFail("pieces of \(piece) bytes, entry \(index): \(differences(mine, reference))")
                break
            }
        }
    }

    // MARK: Where it reads better

    /// A time between -1 and 0 seconds keeps its sign: libarchive read "-0.5" as +0.5 s.
    func testTimeJustBeforeTheEpochKeepsItsSign() throws {
        let archive = try write([(ArchiveEntryHeader(path: Array("old".utf8), type: .file, mtimeSeconds: -1,
                                                      mtimeNanoseconds: 500_000_000), [])])
        let ours = try XCTUnwrap(try readAll(archive, parser: .keepsake).first)
        XCTAssertEqual(ours.header.mtimeSeconds, -1)
        XCTAssertEqual(ours.header.mtimeNanoseconds, 500_000_000)
        let libarchive = try XCTUnwrap(try readAll(archive, parser: .libarchive).first)
        XCTAssertEqual(libarchive.header.mtimeTotalNanoseconds, 500_000_000, "libarchive's reading, which this reader fixes")
        XCTAssertEqual(try PaxExtendedHeader.time(bytes("-99.75")).seconds, -100)
        XCTAssertEqual(try PaxExtendedHeader.time(bytes("-99.75")).nanoseconds, 250_000_000)
        XCTAssertEqual(try PaxExtendedHeader.time(bytes("12.1234567891")).nanoseconds, 123_456_789)
        XCTAssertEqual(try PaxExtendedHeader.time(bytes("-3")).seconds, -3)
    }

    /// A NUL in a pax path is kept (and refused where every path is judged), not cut at as
    /// libarchive did, which turned `a\0/../../x` into `a`.
    func testNULInAPaxPathIsKeptForTheCheck() throws {
        var archive = try write([(ArchiveEntryHeader(path: Array(String(repeating: "p", count: 120).utf8), type: .file, size: 1), [0x41])])
        archive = replacingRecords(in: archive, with: [("path", Array("a".utf8) + [0] + Array("/../../x".utf8))])
        let entry = try XCTUnwrap(try readAll(archive, parser: .keepsake).first)
        XCTAssertEqual(entry.header.path, Array("a".utf8) + [0] + Array("/../../x".utf8))
        guard case .failure = ArchivePath.components(of: entry.header.path) else {
            return XCTFail("a path with a NUL passed the path check")
        }
    }

    func testXattrNamesAreDecodedAsTheyWereEncoded() throws {
        for name in ["user.ünï", "user.b=c%d e", "user.%41", "user.100%", "user.%zz", "security.selinux", "user.\u{7f}\t"] {
            XCTAssertEqual(PaxXattrName.decoded(String(decoding: PaxXattrName.encoded(name), as: UTF8.self)), name)
        }
        XCTAssertEqual(PaxXattrName.decoded(Array("a%4".utf8)), Array("a%4".utf8), "a % without two hex digits stays")
        XCTAssertEqual(PaxXattrName.decoded(Array("a%4a%4A".utf8)), Array("aJJ".utf8))
        XCTAssertNil(PaxXattrName.decoded("user.%00x"), "a NUL no name can hold")
        let archive = try write([(ArchiveEntryHeader(path: Array("x".utf8), type: .file,
                                                      xattrs: [.init(name: "user.ünï", value: [1]), .init(name: "user.a=b", value: [2])]), [])])
        XCTAssertEqual(try readAll(archive, parser: .keepsake).first?.header.xattrs.map(\.name), ["user.ünï", "user.a=b"])
    }

    // MARK: Which reader reads what

    func testKeepsakeArchivesAreReadByTheirOwnReaderAndOtherTarsByLibarchive() throws {
        let source = try makeTemporaryDirectory("reader-choice")
        defer { removeTemporaryDirectory(source) }
        try writeFile(source + "/a.txt", bytes: Array("hello\n".utf8))
        let ours = try write([(ArchiveEntryHeader(path: ArchiveLayout.markerEntryPath, type: .directory, permissions: 0o755), []),
                              (ArchiveEntryHeader(path: Array("a.txt".utf8), type: .file, size: 6), Array("hello\n".utf8))])
        XCTAssertTrue(try ArchiveReader(source: InMemorySource(bytes: ours), name: "ours").readsItself)
        for format in ["pax", "gnu", "ustar"] {
            let tarball = source + "/\(format).tar"
            let tar = Process()
            tar.executableURL = URL(fileURLWithPath: "/bin/tar")
            tar.arguments = ["--format=\(format)", "-cf", tarball, "-C", source, "a.txt"]
            try tar.run()
            tar.waitUntilExit()
            XCTAssertEqual(tar.terminationStatus, 0)
            let reader = try ArchiveReader(source: InMemorySource(bytes: try readFileBytes(Array(tarball.utf8))), name: format)
            XCTAssertFalse(reader.readsItself, format)
            XCTAssertEqual(try reader.nextHeader()?.path, Array("a.txt".utf8), format)
        }
    }

    // MARK: Damage

    func testAFlippedHeaderByteIsDamage() throws {
        let archive = try write([(ArchiveEntryHeader(path: Array("f".utf8), type: .file, size: 3), [1, 2, 3])])
        // The checksum field itself is left alone: a NUL there turned into a space still reads.
        for offset in stride(from: 0, to: 512, by: 7) where !(148..<156).contains(offset) {
            var damaged = archive
            damaged[offset] ^= 0x20
            assertDamaged(damaged, "byte \(offset) flipped")
        }
    }

    func testAnArchiveCutAnywhereIsDamageOrEndsBetweenEntries() throws {
        let samples = Array(TarSamples.edgeCases().prefix(60))
        let archive = try write(samples)
        let whole = try readAll(archive, parser: .keepsake)
        for cut in stride(from: 1, to: archive.count, by: 97) + [511, 512, 513, 1024, archive.count - 1024] {
            let prefix = Array(archive.prefix(cut))
            do {
                let entries = try readAll(prefix, parser: .keepsake)
                // Only a cut between two entries reads as an end; what was read is what is there.
                XCTAssertEqual(entries.map(\.header), whole.prefix(entries.count).map(\.header), "cut at \(cut)")
                XCTAssertEqual(entries.map(\.content), whole.prefix(entries.count).map(\.content), "cut at \(cut)")
            } catch let error as ArchiveError {
                guard case .damaged = error else { return XCTFail("cut at \(cut): \(error)") }
            }
        }
    }

    func testWhatKeepsakeDoesNotWriteIsDamage() throws {
        let archive = try write([(ArchiveEntryHeader(path: Array("f".utf8), type: .file, size: 3), [1, 2, 3])])
        // GNU tar's own magic, and entry types Keepsake never writes.
        assertDamaged(patched(archive) { $0.replaceSubrange(257..<265, with: Array("ustar  ".utf8) + [0]) }, "GNU magic")
        for flag in "LKSVMNgA".utf8 where flag != UInt8(ascii: "g") {
            assertDamaged(patched(archive) { $0[156] = flag }, "type \(flag)")
        }
        // Numbers that are not numbers, and the largest size there is (base 256), which the
        // archive does not hold.
        assertDamaged(patched(archive) { $0.replaceSubrange(124..<136, with: [0x80, 0, 0, 0, 0x7f] + [UInt8](repeating: 0xff, count: 7)) },
                      "a size of 2^63 - 1")
        assertDamaged(patched(archive) { $0[124] = UInt8(ascii: "9") }, "size with a 9")
        assertDamaged(patched(archive) { $0[100] = UInt8(ascii: "x") }, "mode with an x")
    }

    func testMalformedPaxRecordsAreDamage() throws {
        let archive = try write([(ArchiveEntryHeader(path: Array(String(repeating: "n", count: 120).utf8), type: .file, size: 1), [7])])
        for (name, records) in [("length too long", "99 path=x\n"), ("length too short", "5 path=x\n"),
                                ("no newline", "9 path=xy"), ("no key", "7 =abc\n"), ("no equals", "9 pathxy\n"),
                                ("letters for a length", "1a path=x\n"), ("no length", " path=x\n")] {
            assertDamaged(replacingRecords(in: archive, raw: Array(records.utf8)), name)
        }
        for (key, value) in [("size", "1x"), ("size", "-1"), ("uid", ""), ("gid", "99999999999999999999"), ("mtime", "1.x"),
                             ("mtime", "-"), ("mtime", "1.5.5"), ("GNU.sparse.map", "0,1,2"), ("GNU.sparse.numblocks", "1"),
                             ("GNU.sparse.size", "10"), ("SCHILY.realsize", "10")] {
            assertDamaged(replacingRecords(in: archive, with: [("path", Array("f".utf8)), (key, Array(value.utf8))]), "\(key)=\(value)")
        }
        // Over 1 MiB of records (libarchive's limit too).
        var huge = archive
        huge.replaceSubrange(124..<136, with: Array("00010000000 ".utf8))
        resealHeader(&huge, at: 0)
        assertDamaged(huge, "a pax header over 1 MiB")
    }

    func testSparseMapsThatDoNotHoldTogetherAreDamage() throws {
        let header = ArchiveEntryHeader(path: Array("sparse".utf8), type: .file, size: 100_000,
                                        sparseRegions: [.init(offset: 4096, length: 512), .init(offset: 50_000, length: 512)])
        var content = [UInt8](repeating: 0, count: 100_000)
        for index in 4096..<4608 { content[index] = 1 }
        for index in 50_000..<50_512 { content[index] = 2 }
        let archive = try write([(header, content)])
        let read = try XCTUnwrap(try readAll(archive, parser: .keepsake).first)
        XCTAssertEqual(read.header.size, 100_000)
        XCTAssertEqual(read.blocks.map(\.offset), [4096, 50_000])
        for (name, map) in [("overlapping runs", "3\n4096\n512\n4100\n512\n100000\n0\n"),
                            ("a run past the size", "2\n4096\n512\n99900\n512\n"),
                            ("runs out of order", "2\n50000\n512\n4096\n512\n"),
                            ("more runs than stored bytes", "3\n4096\n512\n50000\n512\n60000\n512\n"),
                            ("fewer runs than stored bytes", "1\n4096\n512\n"),
                            ("an empty line", "2\n\n4096\n512\n50000\n512\n"),
                            ("letters", "2\n4096\n5x2\n50000\n512\n"),
                            ("too many runs", "\(ArchiveEntryHeader.mostSparseRuns + 1)\n4096\n512\n"),
                            ("a count too large for 64 bits", "99999999999999999999999\n")] {
            assertDamaged(replacingSparseMap(in: archive, with: Array(map.utf8)), name)
        }
    }

    // MARK: Reading

    /// Whether libarchive could read the sample back: not a file or hard link (whose content
    /// it would read as a header) named with a `/` at the end.
    private func libarchiveReadsIt(_ sample: TarSamples.Sample) -> Bool {
        !(sample.header.type == .file || sample.header.type == .hardlink) || sample.header.path.last != UInt8(ascii: "/")
    }

    private enum Parser {
        case keepsake
        case libarchive
    }

    /// One entry as read: its header and its content in the pieces the reader gave.
    private struct ReadEntry: Equatable {
        var header: ArchiveEntryHeader
        var blocks: [Block]

        struct Block: Equatable {
            var offset: Int64
            var bytes: [UInt8]
        }

        /// The content as it would be restored (pieces joined, holes as zeros).
        var content: [UInt8] {
            var bytes: [UInt8] = []
            for block in blocks {
                if Int(block.offset) > bytes.count { bytes.append(contentsOf: [UInt8](repeating: 0, count: Int(block.offset) - bytes.count)) }
                bytes.append(contentsOf: block.bytes)
            }
            if header.type == .file, Int(header.size) > bytes.count {
                bytes.append(contentsOf: [UInt8](repeating: 0, count: Int(header.size) - bytes.count))
            }
            return bytes
        }
    }

    private func readAll(_ archive: [UInt8], parser: Parser, piece: Int = 1 << 20) throws -> [ReadEntry] {
        let input = TarInput(source: InMemorySource(bytes: archive, piece: piece), cancellation: nil)
        var entries: [ReadEntry] = []
        switch parser {
        case .keepsake:
            let reader = KeepsakeTarReader(input: input, name: "test")
            while let header = try reader.nextHeader() {
                var entry = ReadEntry(header: header, blocks: [])
                while let block = try reader.nextBlock() {
                    if !block.bytes.isEmpty { entry.blocks.append(.init(offset: block.offset, bytes: Array(block.bytes))) }
                }
                entries.append(entry)
            }
        case .libarchive:
            let reader = try LibarchiveTarReader(input: input, name: "test")
            while let header = try reader.nextHeader() {
                var entry = ReadEntry(header: header, blocks: [])
                while let block = try reader.nextBlock() {
                    if !block.bytes.isEmpty { entry.blocks.append(.init(offset: block.offset, bytes: Array(block.bytes))) }
                }
                entries.append(entry)
            }
        }
        return entries
    }

    /// Writes every sample, reads the archive with both readers, and compares each entry's
    /// header and content.
    private func assertSameAsLibarchive(_ samples: [TarSamples.Sample], file: StaticString = #filePath, line: UInt = #line) throws {
        let archive = try write(samples)
        let ours = try readAll(archive, parser: .keepsake)
        // libarchive 3.6 left xattr names percent-encoded, as they are written; the reader of
        // our own decodes them (and ArchiveReader does, for Keepsake's archives libarchive reads).
        let theirs = try readAll(archive, parser: .libarchive).map { entry in
            var decoded = entry
            decoded.header.xattrs = entry.header.xattrs.compactMap { attribute in
                PaxXattrName.decoded(attribute.name).map { .init(name: $0, value: attribute.value) }
            }
            return decoded
        }
        XCTAssertEqual(ours.count, theirs.count, "entries", file: file, line: line)
        var mismatches = 0
        for (index, (mine, reference)) in zip(ours, theirs).enumerated()
        where mine.header != reference.header || mine.content != reference.content {
            mismatches += 1
            if mismatches <= 5 {
                XCTFail("entry \(index) \(PathBytes.display(reference.header.path)): \(differences(mine, reference))", file: file, line: line)
            }
        }
        XCTAssertEqual(mismatches, 0, "entries read differently", file: file, line: line)
    }

    /// The fields where two readings of an entry differ, each as ours / libarchive's.
    private func differences(_ mine: ReadEntry, _ reference: ReadEntry) -> String {
        let fields: [(String, Any, Any)] = [
            ("path", PathBytes.display(mine.header.path), PathBytes.display(reference.header.path)),
            ("type", mine.header.type, reference.header.type), ("size", mine.header.size, reference.header.size),
            ("permissions", mine.header.permissions, reference.header.permissions),
            ("uid", mine.header.uid, reference.header.uid), ("gid", mine.header.gid, reference.header.gid),
            ("user", mine.header.userName ?? "-", reference.header.userName ?? "-"),
            ("group", mine.header.groupName ?? "-", reference.header.groupName ?? "-"),
            ("mtime", "\(mine.header.mtimeSeconds).\(mine.header.mtimeNanoseconds)", "\(reference.header.mtimeSeconds).\(reference.header.mtimeNanoseconds)"),
            ("link", mine.header.linkTarget.map(PathBytes.display) ?? "-", reference.header.linkTarget.map(PathBytes.display) ?? "-"),
            ("rdev", mine.header.rdev, reference.header.rdev),
            ("xattrs", mine.header.xattrs.map { "\($0.name)=\($0.value.count)" }, reference.header.xattrs.map { "\($0.name)=\($0.value.count)" }),
            ("xattr values", mine.header.xattrs.map(\.value).hashValue, reference.header.xattrs.map(\.value).hashValue),
            ("content", mine.content.count, reference.content.count),
            ("content bytes", mine.content.hashValue, reference.content.hashValue),
        ]
        return fields.filter { "\($0.1)" != "\($0.2)" }.map { "\($0.0): \($0.1) / \($0.2)" }.joined(separator: "; ")
    }

    private func assertDamaged(_ archive: [UInt8], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        do {
            let entries = try readAll(archive, parser: .keepsake)
            XCTFail("\(what): read as \(entries.count) entries, not as damage", file: file, line: line)
        } catch let error as ArchiveError {
            guard case .damaged(let archive, _) = error, archive == "test" else {
                return XCTFail("\(what): \(error)", file: file, line: line)
            }
        } catch {
            XCTFail("\(what): \(error)", file: file, line: line)
        }
    }

    // MARK: Writing

    private func write(_ samples: [TarSamples.Sample]) throws -> [UInt8] {
        let sink = InMemorySink()
        let writer = try ArchiveWriter(sink: sink, compression: .none, level: nil, threads: 1)
        for sample in samples {
            try writer.writeHeader(sample.header)
            try sample.content.withUnsafeBytes { try writer.writeData($0, path: sample.header.path) }
            try writer.finishEntry()
        }
        try writer.finish()
        return sink.take()
    }

    /// `archive` with its header block at `offset` changed by `change` and sealed again.
    private func patched(_ archive: [UInt8], at offset: Int = 0, _ change: (inout [UInt8]) -> Void) -> [UInt8] {
        var block = Array(archive[offset..<(offset + 512)])
        change(&block)
        var result = archive
        result.replaceSubrange(offset..<(offset + 512), with: block)
        resealHeader(&result, at: offset)
        return result
    }

    private func resealHeader(_ archive: inout [UInt8], at offset: Int) {
        archive.replaceSubrange((offset + 148)..<(offset + 156), with: Array("        ".utf8))
        let sum = archive[offset..<(offset + 512)].reduce(0) { $0 + Int($1) }
        let digits = Array(String(sum, radix: 8).utf8)
        archive.replaceSubrange((offset + 148)..<(offset + 156), with: [UInt8](repeating: UInt8(ascii: "0"), count: 6 - digits.count) + digits + [0, 0x20])
    }

    /// The archive's first entry (a pax header, its records, then the rest) with the records
    /// replaced by `raw` (the pax header's size set to match).
    private func replacingRecords(in archive: [UInt8], raw: [UInt8]) -> [UInt8] {
        precondition(archive[156] == UInt8(ascii: "x"), "the first entry has a pax header")
        let size = Int(String(decoding: archive[124..<135], as: UTF8.self), radix: 8) ?? 0
        let recordBlocks = (size + 511) / 512 * 512
        var header = Array(archive[0..<512])
        let digits = Array(String(raw.count, radix: 8).utf8)
        header.replaceSubrange(124..<136, with: [UInt8](repeating: UInt8(ascii: "0"), count: 11 - digits.count) + digits + [0x20])
        resealHeader(&header, at: 0)
        let padded = raw + [UInt8](repeating: 0, count: (512 - raw.count % 512) % 512)
        return header + padded + archive[(512 + recordBlocks)...]
    }

    private func replacingRecords(in archive: [UInt8], with records: [(String, [UInt8])]) -> [UInt8] {
        var raw: [UInt8] = []
        for (key, value) in records {
            let body = Array(" \(key)=".utf8) + value + [0x0a]
            var length = body.count + 1
            while String(length).utf8.count + body.count != length { length += 1 }
            raw += Array(String(length).utf8) + body
        }
        return replacingRecords(in: archive, raw: raw)
    }

    /// The archive's first entry, a sparse file, with its one-block map replaced by `map`
    /// (the data after it is left as it is).
    private func replacingSparseMap(in archive: [UInt8], with map: [UInt8]) -> [UInt8] {
        let recordSize = Int(String(decoding: archive[124..<135], as: UTF8.self), radix: 8) ?? 0
        let ustarAt = 512 + (recordSize + 511) / 512 * 512
        let mapAt = ustarAt + 512
        var result = archive
        let padded = map + [UInt8](repeating: 0, count: (512 - map.count % 512) % 512)
        precondition(padded.count == 512, "a map of one block")
        result.replaceSubrange(mapAt..<(mapAt + 512), with: padded)
        return result
    }

    private func bytes(_ text: String) -> UnsafeRawBufferPointer {
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: text.utf8.count, alignment: 1)
        copy.copyBytes(from: Array(text.utf8))
        temporaryBuffers.append(copy)
        return UnsafeRawBufferPointer(copy)
    }

    private var temporaryBuffers: [UnsafeMutableRawBufferPointer] = []

    override func tearDown() {
        for buffer in temporaryBuffers { buffer.deallocate() }
        temporaryBuffers.removeAll()
        super.tearDown()
    }
}
