import Foundation
@testable import KeepsakeArchive
@testable import KeepsakeModel
import KeepsakeSupport
import XCTest

@testable import BackupCore

final class BackupIDTests: KeepsakeTestCase {
    // MARK: Fixtures

    private let sample = "20261129T023000Z-3f9a1c2e"

    private func id(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> BackupID {
        try XCTUnwrap(BackupID(text), "\(text) should parse", file: file, line: line)
    }

    // MARK: Format

    func testFreshIDHasTheDocumentedForm() {
        let date = Date(timeIntervalSince1970: 1_795_919_400.75) // 2026-11-29T02:30:00.75Z
        let fresh = BackupID(date: date)
        XCTAssertEqual(fresh.rawValue.count, 25)
        XCTAssertTrue(fresh.rawValue.hasPrefix("20261129T023000Z-"), fresh.rawValue)
        XCTAssertTrue(HexEncoding.isHex(String(fresh.rawValue.suffix(8)), length: 8), fresh.rawValue)
        XCTAssertEqual(fresh.description, fresh.rawValue)
        XCTAssertEqual(BackupID(fresh.rawValue), fresh, "a fresh id parses back")
    }

    func testFreshIDsDifferInTheirRandomPart() {
        let date = fixedDate()
        let ids = Set((0..<32).map { _ in BackupID(date: date) })
        XCTAssertGreaterThan(ids.count, 30, "eight random hex digits should practically never repeat")
    }

    func testEpochAndFarFutureFormat() {
        XCTAssertTrue(BackupID(date: Date(timeIntervalSince1970: 0)).rawValue.hasPrefix("19700101T000000Z-"))
        XCTAssertTrue(BackupID(date: Date(timeIntervalSince1970: 253_402_300_799)).rawValue.hasPrefix("99991231T235959Z-"))
    }

    // MARK: Parsing

    func testValidStringsParse() throws {
        XCTAssertEqual(try id(sample).rawValue, sample)
        XCTAssertNotNil(BackupID("19700101T000000Z-00000000"))
        XCTAssertNotNil(BackupID("99991231T235959Z-ffffffff"))
    }

    func testInvalidStringsAreRejected() {
        let invalid = [
            "",
            "latest",
            "20261129T023000Z",                 // no random part
            "20261129T023000Z-3f9a1c2",         // too short
            "20261129T023000Z-3f9a1c2e0",       // too long
            "20261129t023000Z-3f9a1c2e",        // lowercase t
            "20261129T023000z-3f9a1c2e",        // lowercase z
            "20261129T023000Z_3f9a1c2e",        // wrong separator
            "20261129T023000Z-3F9A1C2E",        // uppercase hex
            "20261129T023000Z-3f9a1c2g",        // not hex
            "2026112XT023000Z-3f9a1c2e",        // letter in the date
            "20261129T02300AZ-3f9a1c2e",        // letter in the time
            "2026-11-29T02:30:00Z-3f9a",        // ISO form
            " 20261129T023000Z-3f9a1c2",        // leading space
            "20261129T023000Z-3f9a1c2\n",       // trailing newline
            "２0261129T023000Z-3f9a1c2e",        // full-width digit
            "box_20261129T023000Z-3f9a1c2e",    // a file stem, not an id
        ]
        for text in invalid {
            XCTAssertNil(BackupID(text), "'\(text)' should not parse")
        }
    }

    /// Digits in the right places are not enough: month 13 or hour 25 is no time at all.
    func testImpossibleCalendarValuesAreRejected() {
        for text in ["20241301T000000Z-00000000", "20240001T000000Z-00000000", "20240132T000000Z-00000000",
                     "20240101T250000Z-00000000", "20240101T006000Z-00000000", "20230229T000000Z-00000000",
                     "20240431T000000Z-00000000", "20241131T000000Z-00000000", "19000229T000000Z-00000000",
                     "20240100T000000Z-00000000", "20240101T240000Z-00000000", "20240101T000061Z-00000000"] {
            XCTAssertNil(BackupID(text), "'\(text)' should not parse")
        }
        XCTAssertNotNil(BackupID("20240229T235959Z-00000000"), "a leap day is fine")
        XCTAssertNotNil(BackupID("20000229T000000Z-00000000"), "2000 was a leap year")
        XCTAssertNotNil(BackupID("20241231T000060Z-00000000"), "a leap second")
        XCTAssertNotNil(BackupID("20240430T000000Z-00000000"))
    }

    // MARK: Order

    func testIDsSortByTime() {
        let dates = [fixedDate(days: 400), fixedDate(), fixedDate(seconds: 1), fixedDate(days: 31), fixedDate(days: 3650)]
        let ids = dates.map { BackupID(date: $0) }
        let sortedByID = ids.sorted().map { $0.date }
        XCTAssertEqual(sortedByID, dates.sorted().map { Optional($0) })
        XCTAssertLessThan(BackupID("20241231T235959Z-ffffffff")!, BackupID("20250101T000000Z-00000000")!)
        XCTAssertLessThan(BackupID("20250101T000000Z-00000000")!, BackupID("20250101T000000Z-00000001")!)
    }

    // MARK: Date

    func testDateRoundTripsToTheSecond() throws {
        for seconds in [0.0, 1_704_067_200, 1_795_919_400.999, 951_782_400 /* 2000-02-29 */, 4_102_444_799] {
            let date = Date(timeIntervalSince1970: seconds)
            let fresh = BackupID(date: date)
            XCTAssertEqual(fresh.date, Date(timeIntervalSince1970: seconds.rounded(.down)), fresh.rawValue)
        }
        XCTAssertEqual(try id(sample).date, Date(timeIntervalSince1970: 1_795_919_400))
    }

    func testDateIsUTCWhateverTheLocalZone() throws {
        let saved = getenv("TZ").map { String(cString: $0) }
        setenv("TZ", "America/Los_Angeles", 1)
        tzset()
        defer {
            if let saved { setenv("TZ", saved, 1) } else { unsetenv("TZ") }
            tzset()
        }
        let date = fixedDate(days: 10, seconds: 3_723)
        let fresh = BackupID(date: date)
        XCTAssertTrue(fresh.rawValue.hasPrefix("20240111T010203Z-"), fresh.rawValue)
        XCTAssertEqual(fresh.date, date)
    }

    // MARK: Naming

    func testArchiveAndManifestNames() throws {
        let backup = try id(sample)
        XCTAssertEqual(BackupNaming.archiveName(host: "box", id: backup, compression: .zstd), "box_\(sample).tar.zst")
        XCTAssertEqual(BackupNaming.archiveName(host: "box", id: backup, compression: .gzip), "box_\(sample).tar.gz")
        XCTAssertEqual(BackupNaming.archiveName(host: "box", id: backup, compression: .xz), "box_\(sample).tar.xz")
        XCTAssertEqual(BackupNaming.archiveName(host: "box", id: backup, compression: .lz4), "box_\(sample).tar.lz4")
        XCTAssertEqual(BackupNaming.archiveName(host: "box", id: backup, compression: .none), "box_\(sample).tar")
        XCTAssertEqual(BackupNaming.manifestName(host: "box", id: backup), "box_\(sample).manifest.jsonl.zst")
        XCTAssertEqual(ArchiveLayout.manifestEntryPath, Array(".keepsake/manifest.jsonl".utf8))
        XCTAssertEqual(ArchiveLayout.checksumsEntryPath, Array(".keepsake/SHA256SUMS".utf8))
    }

    func testIDFromManifestName() throws {
        let backup = try id(sample)
        XCTAssertEqual(BackupNaming.id(fromManifestName: "box_\(sample).manifest.jsonl"), backup)
        XCTAssertEqual(BackupNaming.id(fromManifestName: "my_odd_host-1_\(sample).manifest.jsonl"), backup)
        XCTAssertEqual(BackupNaming.id(fromManifestName: "\(sample).manifest.jsonl"), backup)
        XCTAssertEqual(BackupNaming.id(fromManifestName: "box_\(sample).manifest.jsonl.zst"), backup, "compressed")
        XCTAssertNil(BackupNaming.id(fromManifestName: "box_\(sample).manifest.jsonl.gz"))
        XCTAssertNil(BackupNaming.id(fromManifestName: "box_latest.manifest.jsonl.zst"))
        XCTAssertNil(BackupNaming.id(fromManifestName: "box_\(sample).tar.zst"))
        XCTAssertNil(BackupNaming.id(fromManifestName: "box_\(sample).manifest.json"))
        XCTAssertNil(BackupNaming.id(fromManifestName: "box_latest.manifest.jsonl"))
        XCTAssertNil(BackupNaming.id(fromManifestName: ".manifest.jsonl"))
        XCTAssertNil(BackupNaming.id(fromManifestName: "box_20261129T023000Z-3F9A1C2E.manifest.jsonl"))
        XCTAssertNil(BackupNaming.id(fromManifestName: "keepsake.lock"))
    }

    func testStemOfNames() {
        let stem = "box_\(sample)"
        XCTAssertEqual(BackupNaming.stem(of: stem + ".manifest.jsonl"), stem)
        XCTAssertEqual(BackupNaming.stem(of: stem + ".manifest.jsonl.zst"), stem)
        for codec in Compression.allCases {
            XCTAssertEqual(BackupNaming.stem(of: stem + codec.fileExtension), stem, "\(codec)")
        }
        XCTAssertNil(BackupNaming.stem(of: stem + ".zip"))
        XCTAssertNil(BackupNaming.stem(of: stem))
        XCTAssertNil(BackupNaming.stem(of: "notes.txt"))
    }

    func testSidecarNamesForArchive() {
        let stem = "box_\(sample)"
        for codec in Compression.allCases {
            XCTAssertEqual(BackupNaming.sidecarNames(forArchive: stem + codec.fileExtension),
                           [stem + ".manifest.jsonl.zst", stem + ".manifest.jsonl"], "\(codec)")
        }
        XCTAssertEqual(BackupNaming.sidecarNames(forArchive: "plain.tar.gz"), ["plain.manifest.jsonl.zst", "plain.manifest.jsonl"])
        XCTAssertEqual(BackupNaming.sidecarNames(forArchive: stem + ".manifest.jsonl"), [], "a manifest has no sidecar")
        XCTAssertEqual(BackupNaming.sidecarNames(forArchive: stem + ".manifest.jsonl.zst"), [], "a manifest has no sidecar")
        XCTAssertEqual(BackupNaming.sidecarNames(forArchive: "photo.jpg"), [])
    }

    func testCompressionFromFileName() {
        XCTAssertEqual(Compression.fromFileName("a.tar.zst"), .zstd)
        XCTAssertEqual(Compression.fromFileName("A.TAR.GZ"), .gzip)
        XCTAssertEqual(Compression.fromFileName("a.tgz"), .gzip)
        XCTAssertEqual(Compression.fromFileName("a.tar.xz"), .xz)
        XCTAssertEqual(Compression.fromFileName("a.tar.lz4"), .lz4)
        XCTAssertEqual(Compression.fromFileName("a.tar"), Compression.none)
        XCTAssertNil(Compression.fromFileName("a.zip"))
    }

    // MARK: Monotonic ids

    func testIDsInOneSecondSortInCreationOrder() throws {
        let date = Date(timeIntervalSince1970: 1_764_383_400)
        var previous: BackupID?
        for _ in 0..<200 {
            let id = BackupID(date: date, after: previous)
            if let previous { XCTAssertGreaterThan(id, previous) }
            XCTAssertNotNil(BackupID(id.rawValue), "\(id) is well formed")
            previous = id
        }
    }

    func testAClockThatWentBackStillSortsAfterTheNewest() throws {
        let newest = try XCTUnwrap(BackupID("20261129T023000Z-3f9a1c2e"))
        let id = BackupID(date: Date(timeIntervalSince1970: 1_700_000_000), after: newest)
        XCTAssertGreaterThan(id, newest)
        XCTAssertTrue(id.rawValue.hasPrefix("20261129T023000Z-"))
    }

    func testTheLastSuffixOfASecondMovesToTheNextSecond() throws {
        let newest = try XCTUnwrap(BackupID("20261129T023059Z-ffffffff"))
        let id = BackupID(date: Date(timeIntervalSince1970: 0), after: newest)
        XCTAssertGreaterThan(id, newest)
        XCTAssertTrue(id.rawValue.hasPrefix("20261129T023100Z-"), id.rawValue)
    }

    func testSuffixesNearTheTopDoNotOverflow() throws {
        let newest = try XCTUnwrap(BackupID("20261129T023000Z-fffffff0"))
        let id = BackupID(date: Date(timeIntervalSince1970: 0), after: newest)
        XCTAssertGreaterThan(id, newest)
    }
}
