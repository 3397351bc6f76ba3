import Foundation
import KeepsakeHashing
import KeepsakeJSON
@testable import KeepsakeModel
import KeepsakeSupport
import XCTest

/// A big file's block table (`BlockTable`): the block sizes chosen, the digests made in one
/// pass over chunks of any size, the manifest line that carries them, what a reader refuses,
/// and the room a manifest of big files is allowed.
final class BlockTableTests: KeepsakeTestCase {
    // MARK: Fixtures

    private let sha = String(repeating: "0123456789abcdef", count: 4)

    private func bigFile(size: Int64, table: BlockTable?) -> ManifestEntry {
        var entry = ManifestEntry(path: Array("srv/images/disk.img".utf8), type: .file, size: size, mode: 0o600,
                                  mtimeNanoseconds: 1_798_761_600_000_000_000, sha256: sha)
        entry.blocks = table
        return entry
    }

    private func line(_ entry: ManifestEntry) -> [UInt8] {
        var writer = JSONWriter()
        entry.write(to: &writer)
        return writer.bytes
    }

    private func parsed(_ line: [UInt8]) throws -> ManifestEntry {
        try line.withUnsafeBufferPointer { try Manifest.parseEntryLine($0, lineNumber: 2) }
    }

    /// `text` (a manifest line) with `old` replaced by `new`, once.
    private func edited(_ line: [UInt8], _ old: String, _ new: String) -> [UInt8] {
        let text = String(decoding: line, as: UTF8.self)
        XCTAssertTrue(text.contains(old), "the line holds \(old)")
        return Array(text.replacingOccurrences(of: old, with: new).utf8)
    }

    // MARK: Policy

    func testBlocksAre4KiBUpTo2GiBAndGrowSoATableHoldsAtMost524288() {
        XCTAssertEqual(BlockTable.blockSize(forFileSize: BlockTable.threshold), 4 << 10)
        XCTAssertEqual(BlockTable.blockSize(forFileSize: 2 << 30), 4 << 10)
        XCTAssertEqual(BlockTable.blockSize(forFileSize: (2 << 30) + 1), 8 << 10)
        XCTAssertEqual(BlockTable.blockSize(forFileSize: 4 << 30), 8 << 10)
        XCTAssertEqual(BlockTable.blockSize(forFileSize: 16 << 30), 32 << 10)
        XCTAssertEqual(BlockTable.blockSize(forFileSize: Int64.max), 1 << 30, "never past the largest size a manifest may name")
        for size: Int64 in [1 << 20, (4 << 30) + 1, 16 << 30, (1 << 40) + 12345] {
            let blockSize = BlockTable.blockSize(forFileSize: size)
            XCTAssertLessThanOrEqual(BlockTable.blockCount(fileSize: size, blockSize: blockSize) ?? .max, BlockTable.mostBlocks)
        }
        XCTAssertEqual(BlockTable.blockCount(fileSize: 3_300_000, blockSize: 65536), 51)
        XCTAssertEqual(BlockTable.blockCount(fileSize: 65536 * 16, blockSize: 65536), 16)
        XCTAssertNil(BlockTable.blockCount(fileSize: 0, blockSize: 65536))
    }

    // MARK: Digests

    func testDigestsAreTheStartOfEachBlocksSHA256HoweverTheBytesArriveInChunks() throws {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<(5 * 4096 + 1234)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let expected = stride(from: 0, to: bytes.count, by: 4096).flatMap { start in
            SHA256Hasher.digest(of: Array(bytes[start..<min(bytes.count, start + 4096)])).prefix(BlockTable.digestLength)
        }
        for chunk in [1, 7, 4095, 4096, 4097, 65536] {
            let digester = BlockDigester(blockSize: 4096, digestLength: BlockTable.digestLength)
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + chunk)
                bytes[start..<end].withUnsafeBytes { digester.update($0) }
                start = end
            }
            XCTAssertEqual(digester.finish(), expected, "chunks of \(chunk)")
            XCTAssertEqual(digester.finish(), [], "it starts over")
        }
        let whole = BlockDigester(blockSize: 4096)
        bytes[0..<8192].withUnsafeBytes { whole.update($0) }
        XCTAssertEqual(whole.finish().count, 64, "a stream ending on a block's end has no empty last block (whole digests)")
    }

    // MARK: The manifest line

    func testATableReadsBackAsWrittenAndOlderReadersLinesStayTheSame() throws {
        let size: Int64 = 3_300_000
        let digests = (0..<(51 * BlockTable.digestLength)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let entry = bigFile(size: size, table: BlockTable(blockSize: 65536, digests: digests))
        let text = String(decoding: line(entry), as: UTF8.self)
        XCTAssertTrue(text.contains(#""blocks":{"size":65536,"digests_b64":""# + Data(digests).base64EncodedString() + #""}"#), text)
        let back = try parsed(line(entry))
        XCTAssertEqual(back, entry)
        XCTAssertEqual(back.blocks?.count, 51)
        XCTAssertEqual(Array(back.blocks?.digest(at: 50) ?? []), Array(digests[(50 * BlockTable.digestLength)...]))
        // A file without a table writes no key: its line is what it always was.
        XCTAssertFalse(String(decoding: line(bigFile(size: size, table: nil)), as: UTF8.self).contains("blocks"))
    }

    func testATableThatDoesNotFitItsFileIsRefusedNamingWhy() throws {
        let table = BlockTable(blockSize: 65536, digests: [UInt8](repeating: 7, count: 51 * BlockTable.digestLength))
        let good = line(bigFile(size: 3_300_000, table: table))
        let encoded = Data(table.digests).base64EncodedString()
        let cases: [(String, [UInt8], String)] = [
            ("one block too few", edited(good, encoded, Data(table.digests.dropLast(BlockTable.digestLength)).base64EncodedString()),
             "holds 50 digests, where a file of 3300000 bytes has 51 blocks of 65536"),
            ("a size that is no power of two", edited(good, #""size":65536,"#, #""size":65537,"#), "a power of two"),
            ("a size too small", edited(good, #""size":65536,"#, #""size":2048,"#), "a power of two from 4096"),
            ("no digests", edited(good, #","digests_b64":""# + encoded + "\"", ""), "'digests_b64'"),
            ("digests not in base64", edited(good, encoded, "%%%"), "'digests_b64'"),
            ("not an object", edited(good, #"{"size":65536,"digests_b64":""# + encoded + #""}"#, "[]"), "must be a JSON object"),
            ("a file of another size", edited(good, #""size":3300000"#, #""size":65536"#), "has 1 blocks"),
            ("on a folder", edited(good, #""type":"file""#, #""type":"dir""#), "only for files"),
        ]
        for (name, bytes, reason) in cases {
            XCTAssertThrowsError(try parsed(bytes), name) { error in
                guard case ManifestError.invalidLine(let line, let said) = error else { return XCTFail("\(name): \(error)") }
                XCTAssertEqual(line, 2, name)
                XCTAssertTrue(said.contains(reason), "\(name): \(said)")
            }
        }
    }

    // MARK: Files stored by blocks

    private let older = BackupID("20270101T020000Z-0000000a")!
    private let newer = BackupID("20270102T020000Z-0000000b")!

    func testANewVersionTakesItsUnchangedBlocksFromWhereTheLastOneHadThem() {
        let digests = (0..<(6 * BlockTable.digestLength)).map { UInt8(truncatingIfNeeded: $0) }
        // The last version: blocks 0-2 whole in `older`, 3-4 in `newer`'s block entry, 5 in `older`.
        let basis = BlockTable(blockSize: 65536, digests: digests,
                               sources: [.init(holder: older, whole: true, archiveOffset: 512, archiveLength: 400_000),
                                         .init(holder: newer, whole: false, archiveOffset: 1536, archiveLength: 140_000)],
                               runs: [.init(count: 3, source: 0), .init(count: 2, source: 1), .init(count: 1, source: 0)])
        let own = BlockTable.Source(holder: nil, whole: false, archiveOffset: 2048, archiveLength: 67_000)
        // Block 1 changed, and the file grew by a block (7 now).
        let table = BlockTable.storedByBlocks(digests: digests + [UInt8](repeating: 9, count: BlockTable.digestLength), blockSize: 65536,
                                              changed: [false, true, false, false, false, false, true], basis: basis, own: own)
        XCTAssertEqual(table.sources, [basis.sources[0], own, basis.sources[1]])
        XCTAssertEqual(table.runs, [.init(count: 1, source: 0), .init(count: 1, source: 1), .init(count: 1, source: 0),
                                    .init(count: 2, source: 2), .init(count: 1, source: 0), .init(count: 1, source: 1)])
        XCTAssertEqual(table.sourceOfEachBlock, [0, 1, 0, 2, 2, 0, 1])
        XCTAssertEqual(table.holders, [older, newer])
        // Read back from its line, and as the next backup sees it.
        var entry = bigFile(size: 7 * 65536 - 100, table: table)
        XCTAssertEqual(try parsed(line(entry)), entry)
        let later = BackupID("20270103T020000Z-0000000c")!
        XCTAssertEqual(table.seen(after: later).sources.map(\.holder), [older, later, newer])
        entry.storedIn = older
        XCTAssertThrowsError(try parsed(line(entry)), "a file stored by blocks names no 'in'")
    }

    func testWhereBlocksLieIsRefusedWhenItCannotBeSo() throws {
        let table = BlockTable(blockSize: 65536, digests: [UInt8](repeating: 7, count: 3 * BlockTable.digestLength),
                               sources: [.init(holder: older, whole: true), .init(holder: nil, whole: false, archiveOffset: 0, archiveLength: 9)],
                               runs: [.init(count: 2, source: 0), .init(count: 1, source: 1)])
        let good = line(bigFile(size: 3 * 65536, table: table))
        XCTAssertNoThrow(try parsed(good))
        let cases: [(String, [UInt8], String)] = [
            ("runs short of the blocks", edited(good, #""runs":[2,0,1,1]"#, #""runs":[2,0]"#), "cover 2 blocks"),
            ("a run past the blocks", edited(good, #""runs":[2,0,1,1]"#, #""runs":[3,0,1,1]"#), "covering the 3 blocks once"),
            ("an index past 'from'", edited(good, #""runs":[2,0,1,1]"#, #""runs":[2,0,1,2]"#), "an index in 'from'"),
            ("an archive holding nothing", edited(good, #""runs":[2,0,1,1]"#, #""runs":[3,0]"#), "holds none of the blocks"),
            ("an empty run", edited(good, #""runs":[2,0,1,1]"#, #""runs":[0,0,2,0,1,1]"#), "a count ≥ 1"),
            ("'at' without 'len'", edited(good, #","len":9"#, ""), "'at' and 'len'"),
            ("no runs", edited(good, #","runs":[2,0,1,1]"#, ""), "'runs'"),
            ("a holder that is no id", edited(good, older.rawValue, "yesterday"), "backup id"),
        ]
        for (name, bytes, reason) in cases {
            XCTAssertThrowsError(try parsed(bytes), name) { error in
                guard case ManifestError.invalidLine(_, let said) = error else { return XCTFail("\(name): \(error)") }
                XCTAssertTrue(said.contains(reason), "\(name): \(said)")
            }
        }
        // In a backup's manifest, blocks can only lie in older backups.
        let line = good
        XCTAssertThrowsError(try line.withUnsafeBufferPointer { try Manifest.parseEntryLine($0, lineNumber: 2, owner: older) }) { error in
            XCTAssertTrue("\(error)".contains("not older than"), "\(error)")
        }
    }

    // MARK: Tables stored as changes

    /// Blocks 0-1 whole in `older`, 2 in this line's own archive, 3 in `newer`'s block entry.
    private func placed(digests: [UInt8]) -> BlockTable {
        BlockTable(blockSize: 65536, digests: digests,
                   sources: [.init(holder: older, whole: true), .init(holder: nil, whole: false, archiveOffset: 0, archiveLength: 9),
                             .init(holder: newer, whole: false)],
                   runs: [.init(count: 2, source: 0), .init(count: 1, source: 1), .init(count: 1, source: 2)])
    }

    func testATableStoredAsChangesHoldsItsOwnBlocksDigestsAndTheSHA256OfEvery() throws {
        let every = (0..<(4 * BlockTable.digestLength)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let whole = placed(digests: every)
        let sha256 = SHA256Hasher.hex(of: every)
        let changes = try XCTUnwrap(whole.asChanges(sha256: sha256))
        XCTAssertEqual(changes.digests, Array(every[(2 * 16)..<(3 * 16)]), "only block 2's: the one its own archive holds")
        XCTAssertEqual(changes.count, 4)
        XCTAssertFalse(changes.holdsEveryDigest)
        XCTAssertEqual(changes.heldDigests.map { $0.map(Array.init) }, [nil, nil, Array(every[32..<48]), nil])
        XCTAssertEqual(whole.heldDigests.compactMap { $0 }.count, 4)
        // Its line reads back as written, and says the SHA-256 of every digest.
        let entry = bigFile(size: 4 * 65536, table: changes)
        let text = String(decoding: line(entry), as: UTF8.self)
        XCTAssertTrue(text.contains(#""digests_b64":""# + Data(changes.digests).base64EncodedString() + #"","digests_sha256":""# + sha256), text)
        XCTAssertEqual(try parsed(line(entry)), entry)
        // Whole again from every digest, and only from those: another digest, or another
        // SHA-256, is not this table's.
        XCTAssertEqual(changes.holdingEvery(every, sha256: sha256), whole)
        XCTAssertNil(changes.holdingEvery(every, sha256: String(repeating: "0", count: 64)))
        XCTAssertNil(changes.holdingEvery(Array(every.dropLast(16)), sha256: sha256))
        XCTAssertEqual(whole.holdingEvery(every, sha256: sha256), whole)
        var other = every
        other[0] ^= 1
        XCTAssertNil(whole.holdingEvery(other, sha256: SHA256Hasher.hex(of: other)), "a whole table checks each digest")
        // A later backup in which the file did not change names this one's archive: its
        // line then holds no digest (each is where its block is).
        let later = changes.seen(after: BackupID("20270103T020000Z-0000000c")!)
        XCTAssertEqual(later.digests, [])
        XCTAssertEqual(later.everyDigestSHA256, sha256)
        XCTAssertEqual(try parsed(line(bigFile(size: 4 * 65536, table: later))).blocks, later)
        XCTAssertEqual(whole.seen(after: newer).digests, every, "a whole table keeps them all")
        XCTAssertNil(BlockTable(blockSize: 65536, digests: every).asChanges(sha256: sha256), "only a file stored by blocks")
    }

    func testATableStoredAsChangesIsRefusedWhenItsDigestsAreNotItsOwnBlocks() throws {
        let every = [UInt8](repeating: 3, count: 4 * BlockTable.digestLength)
        let sha256 = SHA256Hasher.hex(of: every)
        let good = line(bigFile(size: 4 * 65536, table: try XCTUnwrap(placed(digests: every).asChanges(sha256: sha256))))
        XCTAssertNoThrow(try parsed(good))
        let own = Data(every.prefix(16)).base64EncodedString()
        let cases: [(String, [UInt8], String)] = [
            ("every digest", edited(good, own, Data(every).base64EncodedString()), "holds 4 digests, where its own archive holds 1"),
            ("none", edited(good, own, ""), "holds 0 digests, where its own archive holds 1"),
            ("a SHA-256 that is not one", edited(good, sha256, "abc"), "'digests_sha256' must be a SHA-256"),
            ("an uppercase one", edited(good, sha256, sha256.uppercased()), "'digests_sha256' must be a SHA-256"),
            // A few bytes declaring 2^36 blocks held elsewhere: refused before anything is made of them.
            ("a table no file Keepsake reads has", edited(edited(good, #""size":262144"#, #""size":4503599627370496"#),
                                                          "[2,0,1,1,1,2]", "[68719476734,0,1,1,1,2]"),
             "has 68719476736 blocks of 65536, more than the 524288 a table may hold"),
        ]
        for (name, bytes, reason) in cases {
            XCTAssertThrowsError(try parsed(bytes), name) { error in
                guard case ManifestError.invalidLine(_, let said) = error else { return XCTFail("\(name): \(error)") }
                XCTAssertTrue(said.contains(reason), "\(name): \(said)")
            }
        }
        // A whole file's table holds every digest: one said to be stored as changes is refused.
        let whole = line(bigFile(size: 4 * 65536, table: BlockTable(blockSize: 65536, digests: every)))
        let claimed = edited(whole, #""}"#, #"","digests_sha256":""# + sha256 + #""}"#)
        XCTAssertThrowsError(try parsed(claimed)) { error in
            XCTAssertTrue("\(error)".contains("only a file stored by blocks"), "\(error)")
        }
    }

    // MARK: Room in a manifest

    func testAManifestIsAllowedTheRoomItsDeclaredBlockDigestsTake() throws {
        // One 4 GiB file: 65,536 digests, a line of 1.4 MB, which its one entry
        // alone would not make room for.
        let size: Int64 = 4 << 30
        let count = BlockTable.blockCount(fileSize: size, blockSize: 65536) ?? 0
        let entryLine = line(bigFile(size: size, table: BlockTable(blockSize: 65536, digests: [UInt8](repeating: 1, count: count * BlockTable.digestLength))))
        var summary = BackupSummary(id: BackupID("20270111T030000Z-0000000c")!, created: Date(timeIntervalSince1970: 1_799_636_400),
                                    host: "box", user: "ana", sources: ["/srv"], tags: [], compression: .zstd, level: 3,
                                    fileCount: 1, originalBytes: size, toolVersion: "keepsake test")
        func manifest() -> [UInt8] { Array((summary.json.serialized() + "\n").utf8) + entryLine + [10] }
        XCTAssertGreaterThan(entryLine.count, ManifestSizeLimit.limit(forEntries: 1))
        // Both readers: the one that holds the bytes, and the one that parses as it reads
        // (which restore uses; it once allowed only the entries' room, so that no file of
        // 3.3 GiB or more could be restored).
        XCTAssertThrowsError(try ManifestSizeLimit.read(MemorySource(manifest()), name: "the manifest X"), "undeclared") { error in
            guard case ManifestError.tooLarge = error else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try Manifest.read(MemorySource(manifest()), name: "the manifest X"), "undeclared") { error in
            guard case ManifestError.tooLarge = error else { return XCTFail("\(error)") }
        }
        summary.blockDigests = Int64(count)
        let bytes = try ManifestSizeLimit.read(MemorySource(manifest()), name: "the manifest X")
        let read = try Manifest.parse(bytes)
        XCTAssertEqual(read.summary.blockDigests, Int64(count))
        XCTAssertEqual(read.entries.count, 1)
        let streamed = try Manifest.read(MemorySource(manifest()), name: "the manifest X")
        XCTAssertEqual(streamed.summary.blockDigests, Int64(count))
        XCTAssertEqual(streamed.entries.count, 1)
    }
}
