import Foundation
import KeepsakeModel
import XCTest

@testable import BackupCore

/// How much of a changed big file's blocks a backup spools in `$TMPDIR` before it gives up
/// and stores the file whole (`BlockSpool.mostSpooled`): half the file, and a quarter of the
/// room free where the spool lives.
final class BlockSpoolTests: KeepsakeTestCase {
    func testTheSpoolTakesHalfTheFileAndAQuarterOfTheRoomAtMost() {
        let gib: Int64 = 1 << 30
        XCTAssertEqual(BlockSpool.mostSpooled(forFileSize: 4 * gib, room: 64 * gib), 2 * gib, "room enough: half the file")
        XCTAssertEqual(BlockSpool.mostSpooled(forFileSize: 4 * gib, room: gib), gib / 4, "a 1 GiB tmpfs: 256 MiB")
        XCTAssertEqual(BlockSpool.mostSpooled(forFileSize: 4 * gib, room: 0), 0, "no room told: stored whole")
        XCTAssertEqual(BlockSpool.mostSpooled(forFileSize: 4 * gib, room: .max), 2 * gib)
        XCTAssertEqual(BlockSpool.mostSpooled(forFileSize: -1, room: gib), 0, "never below nothing")
    }
}
