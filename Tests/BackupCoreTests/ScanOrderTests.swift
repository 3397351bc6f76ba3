@testable import KeepsakeScan
import XCTest
@testable import BackupCore

/// The order of a scan as a comparison of whole paths.
final class ScanOrderTests: KeepsakeTestCase {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    func testFoldersComeBeforeTheirContentsAndNamesSortBytewise() {
        let visited = ["a", "a/b", "a/b/c", "a/x", "a-c", "a-c/d", "a.txt", "a0", "b", "b/\u{00e9}"]
        XCTAssertEqual(visited.shuffled().map(bytes).sorted(by: ScanOrder.precedes), visited.map(bytes))
        XCTAssertEqual(ScanOrder.compare(bytes("a/b"), bytes("a/b")), 0)
        XCTAssertLessThan(ScanOrder.compare(bytes("a/b"), bytes("a-c")), 0, "plain bytewise order would say otherwise")
    }

    func testSourcesAreScannedInScanOrder() {
        let sources = ["/x/a-c", "/x/a", "/x/a/b", "/y"].map(bytes)
        XCTAssertEqual(Scanner.withoutNestedSources(sources), ["/x/a", "/x/a-c", "/y"].map(bytes))
    }
}
