import XCTest
@testable import BackupCore

final class PathKeyTests: XCTestCase {
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
        let index = Manifest.index(of: entries)
        XCTAssertEqual(index.count, entries.count)
        for entry in entries { XCTAssertEqual(index[PathKey(entry.path)]?.size, entry.size) }
    }
}
