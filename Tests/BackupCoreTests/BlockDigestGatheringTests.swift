@testable import BackupCore
import KeepsakeHashing
import KeepsakeModel
import XCTest

/// Gathering a file's block digests from where its blocks are (`BlockDigestGathering`):
/// three versions of a file, each line made as a backup makes it, the newest stored as
/// changes; what is gathered must be every digest of the newest version, checked
/// independently here by hashing its bytes, and anything else is named.
final class BlockDigestGatheringTests: KeepsakeTestCase {
    // MARK: Fixtures

    private let blockSize = 65536
    private let first = BackupID("20270101T020000Z-0000000a")!
    private let second = BackupID("20270102T020000Z-0000000b")!
    private let path = Array("srv/vm/disk.img".utf8)

    /// Each block's digest, as a table holds them: the first 16 bytes of its SHA-256.
    private func digests(_ data: [UInt8]) -> [UInt8] {
        stride(from: 0, to: data.count, by: blockSize).flatMap {
            SHA256Hasher.digest(of: Array(data[$0..<min(data.count, $0 + blockSize)])).prefix(BlockTable.digestLength)
        }
    }

    private func line(_ data: [UInt8], table: BlockTable) -> ManifestEntry {
        var entry = ManifestEntry(path: path, type: .file, size: Int64(data.count), mode: 0o600,
                                  mtimeNanoseconds: 1_798_761_600_000_000_000, sha256: SHA256Hasher.hex(of: data))
        entry.blocks = table
        return entry
    }

    private struct Chain {
        var lines: [ManifestEntry] // the first backup's, the second's (as changes), the third's (as changes)
        var newest: [UInt8] // the third version's bytes
        var wholeTable: BlockTable // the third's table with every digest
    }

    /// Five blocks: whole in `first`; block 1 changed in `second`; block 3 in the third.
    private func chain() throws -> Chain {
        var data = (0..<(5 * blockSize - 100)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
        let v1 = BlockTable(blockSize: blockSize, digests: digests(data))
        let firstLine = line(data, table: v1)
        data[blockSize + 5] ^= 0xff
        let basis1 = BlockTable(blockSize: blockSize, digests: v1.digests, sources: [.init(holder: first, whole: true)],
                                runs: [.init(count: 5, source: 0)])
        let v2 = BlockTable.storedByBlocks(digests: digests(data), blockSize: blockSize, changed: [false, true, false, false, false],
                                           basis: basis1, own: .init(holder: nil, whole: false))
        let secondLine = line(data, table: try XCTUnwrap(v2.asChanges(sha256: SHA256Hasher.hex(of: v2.digests))))
        data[3 * blockSize] ^= 0xff
        let v3 = BlockTable.storedByBlocks(digests: digests(data), blockSize: blockSize, changed: [false, false, false, true, false],
                                           basis: v2.seen(after: second), own: .init(holder: nil, whole: false))
        XCTAssertEqual(v3.sourceOfEachBlock.map { v3.sources[$0].holder }, [first, second, first, nil, first])
        let thirdLine = line(data, table: try XCTUnwrap(v3.asChanges(sha256: SHA256Hasher.hex(of: v3.digests))))
        return Chain(lines: [firstLine, secondLine, thirdLine], newest: data, wholeTable: v3)
    }

    private func gathered(_ table: BlockTable?, _ holders: [BackupID: BlockDigestGathering.Holder]) throws
        -> Result<BlockTable, BlockDigestGathering.Gap> {
        BlockDigestGathering.gather(try XCTUnwrap(table), holders: holders)
    }

    // MARK: Tests

    func testEveryDigestIsGatheredFromTheLinesThatHoldTheBlocks() throws {
        let chain = try chain()
        XCTAssertEqual(chain.lines[2].blocks?.digests.count, BlockTable.digestLength, "the third line holds its own block's digest only")
        let result = try gathered(chain.lines[2].blocks, [first: .line(chain.lines[0]), second: .line(chain.lines[1])])
        let whole = try result.get()
        XCTAssertEqual(whole.digests, digests(chain.newest), "every digest of the newest version, as its bytes hash")
        XCTAssertEqual(whole, chain.wholeTable)
        // A table that holds every digest is checked digest by digest the same way.
        XCTAssertEqual(try gathered(chain.wholeTable, [first: .line(chain.lines[0]), second: .line(chain.lines[1])]).get(),
                       chain.wholeTable)
    }

    func testAGoneHoldersBlocksComeFromTheSupplementThatHoldsThem() throws {
        let chain = try chain()
        let secondDigests = try XCTUnwrap(chain.lines[1].blocks?.digests)
        let held = HeldBlocks(origin: second, path: path, blockSize: blockSize, indices: [1], digests: secondDigests,
                              entrySize: 2 * Int64(blockSize))
        var planted = held
        planted.digests = [UInt8](repeating: 0, count: BlockTable.digestLength)
        let table = chain.lines[2].blocks
        XCTAssertEqual(try gathered(table, [first: .line(chain.lines[0]), second: .gone([held])]).get(), chain.wholeTable)
        // A supplement that holds other bytes as that block is caught by the SHA-256 of every
        // digest, for a table stored as changes; a whole table's digest passes it over.
        XCTAssertThrowsError(try gathered(table, [first: .line(chain.lines[0]), second: .gone([planted])]).get()) { error in
            XCTAssertTrue((error as? BlockDigestGathering.Gap)?.reason.contains("SHA-256 of their digests differs") == true, "\(error)")
        }
        XCTAssertEqual(try gathered(chain.wholeTable, [first: .line(chain.lines[0]), second: .gone([planted, held])]).get(),
                       chain.wholeTable)
        XCTAssertEqual(try gathered(table, [first: .line(chain.lines[0]), second: .gone([])]).failureGap,
                       BlockDigestGathering.Gap(block: 1, holder: second, reason: "backup \(second) is gone and no supplement holds "
                                                + "block 1 of it as recorded"))
    }

    func testALineThatDoesNotHoldABlockAsRecordedIsNamed() throws {
        let chain = try chain()
        let table = chain.lines[2].blocks
        // The second backup's line with another digest for its block 1.
        var forged = chain.lines[1]
        let blocks = try XCTUnwrap(forged.blocks)
        forged.blocks = BlockTable(blockSize: blockSize, digests: [UInt8](repeating: 9, count: 16), sources: blocks.sources,
                                   runs: blocks.runs, everyDigestSHA256: blocks.everyDigestSHA256)
        XCTAssertEqual(try gathered(table, [first: .line(chain.lines[0]), second: .line(forged)]).failureGap?.block, 0,
                       "stored as changes: caught by the SHA-256 of every digest")
        XCTAssertEqual(try gathered(chain.wholeTable, [first: .line(chain.lines[0]), second: .line(forged)]).failureGap,
                       BlockDigestGathering.Gap(block: 1, holder: second, reason: "backup \(second) does not hold block 1 of it as recorded"))
        // The second backup's line with the file whole (no block entry there), or none at all.
        for (name, there) in [("whole there", chain.lines[0]), ("no line", nil)] as [(String, ManifestEntry?)] {
            XCTAssertEqual(try gathered(table, [first: .line(chain.lines[0]), second: .line(there)]).failureGap,
                           BlockDigestGathering.Gap(block: 1, holder: second, reason: "backup \(second) does not hold block 1 of it as recorded"),
                           name)
        }
        // The first backup's line stored by blocks, where the table says whole.
        XCTAssertEqual(try gathered(table, [first: .line(chain.lines[1]), second: .line(chain.lines[1])]).failureGap?.holder, first)
        XCTAssertEqual(try gathered(table, [second: .line(chain.lines[1])]).failureGap,
                       BlockDigestGathering.Gap(block: 0, holder: first, reason: "backup \(first), which holds block 0 of it, is missing"))
    }
}

private extension Result where Failure == BlockDigestGathering.Gap {
    /// The gap, when there is one.
    var failureGap: BlockDigestGathering.Gap? {
        if case .failure(let gap) = self { return gap }
        return nil
    }
}
