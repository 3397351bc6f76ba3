@testable import KeepsakeModel
import XCTest
@testable import BackupCore

final class PathKeyTests: KeepsakeTestCase {
    func testKeysAreEqualExactlyWhenTheirBytesAre() {
        let paths: [[UInt8]] = [[], Array("a".utf8), Array("a/".utf8), Array("a/b".utf8), [0xFF, 0x00, 0x2F], [0xFF, 0x00]]
        var set = Set<PathKey>()
        for path in paths { XCTAssertTrue(set.insert(PathKey(path)).inserted, "\(path)") }
        for path in paths {
            XCTAssertTrue(set.contains(PathKey(path)))
            XCTAssertEqual(PathKey(path).hashValue, PathKey(Array(path)).hashValue)
        }
        XCTAssertFalse(set.contains(PathKey(Array("b".utf8))))
    }

    func testAManifestIndexFindsEveryEntryByItsPath() {
        let entries = (0..<2000).map { ManifestEntry(path: Array("dir/file-\($0)".utf8), type: .file, size: Int64($0)) }
        let index = ManifestIndex(entries)
        XCTAssertEqual(index.count, entries.count)
        for entry in entries { XCTAssertEqual(index[PathKey(entry.path)]?.size, entry.size) }
        XCTAssertNil(index[PathKey(Array("dir/file-2000".utf8))])
        // Iteration gives each path once, with its entry.
        var seen = Set<PathKey>()
        for (key, entry) in index {
            XCTAssertEqual(key.bytes, entry.path)
            XCTAssertTrue(seen.insert(key).inserted)
        }
        XCTAssertEqual(seen.count, entries.count)
    }

    func testALaterDuplicateWinsAsInTar() {
        let first = ManifestEntry(path: Array("a".utf8), type: .file, size: 1)
        let second = ManifestEntry(path: Array("a".utf8), type: .file, size: 2)
        let index = ManifestIndex([first, ManifestEntry(path: Array("b".utf8), type: .directory), second])
        XCTAssertEqual(index.count, 2)
        XCTAssertEqual(index[PathKey(Array("a".utf8))]?.size, 2)
        XCTAssertEqual(index.map(\.value.size).sorted(), [0, 2])
        XCTAssertEqual(index.entries.count, 3, "the entries are kept as they are")
    }
}
