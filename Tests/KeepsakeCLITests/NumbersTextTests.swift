import BackupCore
@testable import KeepsakeCLI
import Foundation
import KeepsakeModel
import XCTest

/// The numbers `backup`, `list`, `verify` and `run` show: the compression ratio (one
/// definition for full and incremental backups) and what a verify checked.
final class NumbersTextTests: KeepsakeTestCase {
    // MARK: Fixtures

    private let id = BackupID(date: Date(timeIntervalSince1970: 1_800_000_000))

    private func summary(newBytes: Int64, stored: Int64, parent: BackupID? = nil) -> BackupSummary {
        BackupSummary(id: id, created: Date(timeIntervalSince1970: 1_800_000_000), host: "h", user: "u", sources: ["/src"],
                      tags: [], compression: .zstd, level: nil, originalBytes: 1 << 20, toolVersion: "test", parent: parent,
                      newBytes: newBytes, archive: .init(name: "a.tar.zst", size: stored, sha256: ""))
    }

    // MARK: Ratio

    func testRatioIsTheArchivesOwnContentOverItsSize() {
        XCTAssertEqual(CompressionRatio.text(summary(newBytes: 3_000, stored: 1_000)), "3.0×")
        XCTAssertEqual(CompressionRatio.text(content: 1_000, stored: 1_000), "1.0×")
        XCTAssertEqual(CompressionRatio.text(content: 500, stored: 1_000), "0.5×")
        XCTAssertEqual(CompressionRatio.text(content: 100, stored: 1_000), "0.1×")
    }

    /// An incremental that stores a few new bytes beside its manifest: never "0.0×".
    func testSmallIncrementalRatioIsNotZero() {
        let incremental = summary(newBytes: 3, stored: 2_048, parent: id)
        XCTAssertEqual(CompressionRatio.text(incremental), "<0.1×")
        XCTAssertEqual(CompressionRatio.text(content: 49, stored: 1_000), "<0.1×")
        XCTAssertEqual(CompressionRatio.text(content: 50, stored: 1_000), "0.1×", "rounds like the other ratios")
    }

    func testIncrementalWithNothingNewHasNoRatio() {
        XCTAssertEqual(CompressionRatio.text(summary(newBytes: 0, stored: 1_900, parent: id)), "-")
        XCTAssertEqual(CompressionRatio.text(content: 10, stored: 0), "-", "no archive size known")
    }

    // MARK: What verify checked

    private func report(files: Int64, bytes: Int64, earlier: Int64 = 0, reliesOn: [BackupID] = []) -> VerifyReport {
        var report = VerifyReport(id: id, name: "a.tar.zst")
        report.filesChecked = files
        report.bytesChecked = bytes
        report.filesInEarlierArchives = earlier
        report.reliesOn = reliesOn
        return report
    }

    func testFullBackupCountsItsFiles() {
        XCTAssertEqual(VerifyReportText.checked(report(files: 17, bytes: 460_000)), "17 files, 449 KiB")
        XCTAssertEqual(VerifyReportText.checked(report(files: 1, bytes: 3)), "1 file, 3 B")
    }

    /// An incremental whose files are all in earlier backups: not "0 files, 0 B".
    func testIncrementalWithNothingNewSaysWhatWasChecked() {
        let text = VerifyReportText.checked(report(files: 0, bytes: 0, earlier: 17, reliesOn: [id]))
        XCTAssertEqual(text, "no new files; 17 files in 1 earlier backup, checked")
        XCTAssertEqual(VerifyReportText.checked(report(files: 0, bytes: 0, earlier: 1, reliesOn: [id, id])),
                       "no new files; 1 file in 2 earlier backups, checked")
    }

    func testIncrementalWithNewFiles() {
        XCTAssertEqual(VerifyReportText.checked(report(files: 1, bytes: 3, earlier: 17, reliesOn: [id])),
                       "1 file, 3 B; 17 more in 1 earlier backup, checked")
        // A lone archive file: its earlier backups are not at hand.
        XCTAssertEqual(VerifyReportText.checked(report(files: 1, bytes: 3, earlier: 17)),
                       "1 file, 3 B; 17 more in earlier backups, not checked")
    }

    // MARK: JSON

    func testVerifyJSONKeepsItsFieldsAndAddsWhereReadingStopped() {
        var damaged = report(files: 2, bytes: 10)
        damaged.unreadableFrom = "frame 3"
        damaged.entriesUnchecked = 40
        guard case .object(let object) = VerifyReportJSON.encode(damaged) else { return XCTFail("not an object") }
        for key in ["id", "archive", "intact", "files_checked", "bytes_checked", "archive_problems", "damaged_files",
                    "files_in_earlier_archives", "relies_on", "contents_unchecked"] {
            XCTAssertNotNil(object[key], "\(key) is still there")
        }
        XCTAssertEqual(object["unreadable_from"], .string("frame 3"))
        XCTAssertEqual(object["entries_unchecked"], .int(40))
        guard case .object(let intact) = VerifyReportJSON.encode(report(files: 1, bytes: 1)) else { return XCTFail("not an object") }
        XCTAssertEqual(intact["unreadable_from"], .null)
        XCTAssertEqual(intact["entries_unchecked"], .int(0))
    }
}
