import Foundation
@testable import KeepsakeArchive
@testable import KeepsakeModel
@testable import KeepsakeStorage
import KeepsakeSupport
import XCTest

@testable import BackupCore

// test-tag(threads): summaries read by a pool of threads
final class CatalogTests: KeepsakeTestCase {
    // MARK: Setup

    private var root = ""
    private var destination = ""
    private var storage: LocalFolderBackend!
    private var results: [BackupResult] = []

    /// Three backups; the first two on the same day.
    private let dates = [fixedDate(days: 1), fixedDate(days: 1, seconds: 30), fixedDate(days: 40)]

    override func setUpWithError() throws {
        try super.setUpWithError()
        root = try makeTemporaryDirectory("catalog")
        destination = root + "/dest"
        storage = LocalFolderBackend(path: destination)
        results = []
        for (index, date) in dates.enumerated() {
            let source = root + "/src\(index)"
            try writeFile(source + "/note.txt", "backup number \(index)\n")
            try writeFile(source + "/deeper/data.bin", String(repeating: "x", count: 100 * (index + 1)))
            let engine = BackupEngine(storage: storage, events: nil, cancellation: CancellationFlag())
            results.append(try engine.run(BackupRequest(sources: [source], scan: try noExcludes(), toolVersion: "test",
                                                        now: date)))
        }
    }

    override func tearDownWithError() throws {
        storage = nil
        removeTemporaryDirectory(root)
        try super.tearDownWithError()
    }

    private var idsOldestFirst: [BackupID] {
        zip(dates, results).sorted { $0.0 < $1.0 }.map { $0.1.summary.id }
    }

    /// Stores a manifest object with the given content, as a crashed or hostile writer might.
    private func storeManifest(named name: String, _ content: String) throws {
        let pending = try storage.create(name)
        try Array(content.utf8).withUnsafeBytes { try pending.write($0) }
        try pending.commit()
    }

    private func assertError(_ reference: String, _ expected: EngineError, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try BackupCatalog(storage: storage).resolve(reference), file: file, line: line) { error in
            XCTAssertEqual(error as? EngineError, expected, file: file, line: line)
        }
    }

    // MARK: Listing

    func testItemsAreSortedOldestFirst() throws {
        let items = try BackupCatalog(storage: storage).items()
        XCTAssertEqual(items.map(\.id), idsOldestFirst)
        XCTAssertEqual(items.map { $0.summary?.created }, dates.sorted().map { Optional($0) })
        for item in items {
            XCTAssertNil(item.problem)
            XCTAssertEqual(item.manifestName, BackupNaming.manifestName(host: HostIdentity.fileSafeHostName, id: item.id))
            let summary = try XCTUnwrap(item.summary)
            XCTAssertEqual(summary.toolVersion, "test")
            XCTAssertEqual(summary.fileCount, 2)
            XCTAssertEqual(summary.directoryCount, 2)
            XCTAssertEqual(summary.compression, .zstd)
            XCTAssertNotNil(summary.archive, "the copy beside the archive names it")
        }
    }

    func testEachBackupHasArchiveAndManifestObjects() throws {
        let names = try storage.list().map(\.name)
        XCTAssertEqual(names.count, 6, "\(names)")
        for result in results {
            XCTAssertTrue(names.contains(try XCTUnwrap(result.archiveName)))
            XCTAssertTrue(names.contains(try XCTUnwrap(result.manifestName)))
        }
    }

    func testManifestOfItemHasTheEntries() throws {
        let catalog = BackupCatalog(storage: storage)
        let item = try catalog.resolve("latest")
        let manifest = try catalog.manifest(of: item)
        XCTAssertEqual(manifest.summary.id, item.id)
        let paths = manifest.entries.map(\.displayPath)
        XCTAssertEqual(paths, [root + "/src2", root + "/src2/deeper", root + "/src2/deeper/data.bin", root + "/src2/note.txt"]
            .map { String($0.dropFirst()) })
    }

    func testEmptyDestinationHasNoItems() throws {
        let empty = LocalFolderBackend(path: root + "/nothing-here")
        XCTAssertEqual(try BackupCatalog(storage: empty).items().count, 0)
        XCTAssertThrowsError(try BackupCatalog(storage: empty).resolve("latest")) { error in
            XCTAssertEqual(error as? EngineError, .backupNotFound(reference: "latest", destination: empty.location))
        }
    }

    // MARK: Resolving

    func testResolveLatest() throws {
        XCTAssertEqual(try BackupCatalog(storage: storage).resolve("latest").id, idsOldestFirst.last)
    }

    func testResolveFullID() throws {
        for id in idsOldestFirst {
            XCTAssertEqual(try BackupCatalog(storage: storage).resolve(id.rawValue).id, id)
        }
    }

    func testResolveUniquePrefix() throws {
        let catalog = BackupCatalog(storage: storage)
        let newest = try XCTUnwrap(idsOldestFirst.last)
        XCTAssertEqual(try catalog.resolve("20240210").id, newest)
        XCTAssertEqual(try catalog.resolve(String(idsOldestFirst[0].rawValue.prefix(20))).id, idsOldestFirst[0])
        XCTAssertEqual(try catalog.resolve(String(newest.rawValue.prefix(20))).id, newest)
    }

    func testAmbiguousPrefixNamesTheCandidates() throws {
        let expected = idsOldestFirst.prefix(2).map(\.rawValue)
        assertError("20240102", .ambiguousReference(reference: "20240102", candidates: expected))
        assertError("2024", .ambiguousReference(reference: "2024", candidates: idsOldestFirst.map(\.rawValue)))
    }

    func testUnknownReferenceIsNotFound() {
        for reference in ["1999", "20240101T000000Z-zzzzzzzz", "Latest", "", "20240210T000000Z-00000000-extra"] {
            assertError(reference, .backupNotFound(reference: reference, destination: destination))
        }
    }

    // MARK: Summaries read once

    /// Each step of `keepsake run` lists the backups again: through one backend, each
    /// manifest's summary is read once (its memo), and read again once the object is
    /// replaced (another size), deleted or written anew.
    func testEachSummaryIsReadOnceABackendUntilItsManifestChanges() throws {
        let first = try BackupCatalog(storage: storage).items()
        XCTAssertEqual(first.count, 3)
        let name = first[0].manifestName
        let file = destination + "/" + name
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
        // Zeros of the same size, written behind the backend's back: no manifest at all.
        try Data(count: size).write(to: URL(fileURLWithPath: file))
        XCTAssertEqual(try BackupCatalog(storage: storage).items().first?.summary, first[0].summary,
                       "the same backend reads the summary of an object of the same size once")
        XCTAssertNil(try BackupCatalog(storage: LocalFolderBackend(path: destination)).items().first?.summary,
                     "another backend reads it anew")

        // Another size: read again.
        try Data(count: size + 1).write(to: URL(fileURLWithPath: file))
        XCTAssertNil(try BackupCatalog(storage: storage).items().first?.summary)
        let problem = try XCTUnwrap(try BackupCatalog(storage: storage).items().first?.problem)
        XCTAssertTrue(problem.contains("manifest"), problem)

        // Deleted, then written anew through the backend at the size the memo knew.
        let second = first[1].manifestName
        let secondBytes = try storage.readObject(second)
        XCTAssertEqual(try BackupCatalog(storage: storage).items()[1].summary, first[1].summary)
        try storage.delete(second)
        XCTAssertEqual(try BackupCatalog(storage: storage).items().map(\.manifestName).contains(second), false)
        try storeManifest(named: second, String(repeating: "x", count: secondBytes.count))
        XCTAssertNil(try BackupCatalog(storage: storage).items()[1].summary, "a deleted object's summary is forgotten")

        // Moved over: forgotten under both names.
        let third = first[2].manifestName
        XCTAssertEqual(try BackupCatalog(storage: storage).items()[2].summary, first[2].summary)
        let thirdBytes = try storage.readObject(third)
        try storeManifest(named: "vm_20200101T000000Z-0000000a.manifest.jsonl", String(repeating: "y", count: thirdBytes.count))
        try storage.move("vm_20200101T000000Z-0000000a.manifest.jsonl", to: third)
        XCTAssertNil(try BackupCatalog(storage: storage).items().last?.summary, "an object moved over another is read anew")
    }

    // MARK: Damaged manifests

    func testCorruptManifestIsListedWithAProblem() throws {
        let corruptID = "20231231T000000Z-deadbeef"
        try storeManifest(named: "vm_\(corruptID).manifest.jsonl", "garbage that is not JSON\n{\"path\":\"x\",\"type\":\"file\"}\n")
        let items = try BackupCatalog(storage: storage).items()
        XCTAssertEqual(items.count, 4)
        let corrupt = items[0]
        XCTAssertEqual(corrupt.id.rawValue, corruptID, "it sorts by its id like the others")
        XCTAssertNil(corrupt.summary)
        let problem = try XCTUnwrap(corrupt.problem)
        XCTAssertTrue(problem.contains("Not a Keepsake manifest"), problem)
        XCTAssertEqual(items.dropFirst().map(\.id), idsOldestFirst)
        XCTAssertTrue(items.dropFirst().allSatisfy { $0.problem == nil })

        // It can still be named; its whole manifest is reported unreadable, not crashed on.
        let catalog = BackupCatalog(storage: storage)
        XCTAssertEqual(try catalog.resolve("20231231").id.rawValue, corruptID)
        XCTAssertThrowsError(try catalog.manifest(of: corrupt)) { error in
            guard case .manifestUnreadable(let name, _)? = error as? EngineError else { return XCTFail("\(error)") }
            XCTAssertEqual(name, corrupt.manifestName)
        }
        XCTAssertEqual(try catalog.resolve("latest").id, idsOldestFirst.last)
    }

    func testEmptyAndFutureManifestsAreListedWithProblems() throws {
        try storeManifest(named: "vm_20200101T000000Z-00000001.manifest.jsonl", "")
        let future = "{\"keepsake\":\"manifest\",\"format\":9,\"id\":\"20200101T000000Z-00000002\"}\n"
        try storeManifest(named: "vm_20200101T000000Z-00000002.manifest.jsonl", future)
        let items = try BackupCatalog(storage: storage).items()
        XCTAssertEqual(items.count, 5)
        XCTAssertNotNil(items[0].problem)
        XCTAssertEqual(items[1].problem, ManifestError.unsupportedFormat(9).description)
        XCTAssertNil(items[1].summary)
    }

    // MARK: Compressed manifests

    func testTheManifestBesideTheArchiveIsZstdWithTheSummaryInAFrameOfItsOwn() throws {
        let item = try BackupCatalog(storage: storage).resolve("latest")
        XCTAssertTrue(item.manifestName.hasSuffix(".manifest.jsonl.zst"), item.manifestName)
        let stored = try storage.readObject(item.manifestName)
        XCTAssertEqual(Array(stored.prefix(4)), [0x28, 0xB5, 0x2F, 0xFD], "a zstd frame")
        XCTAssertNotEqual(Array(stored.suffix(4)), [0xB1, 0xEA, 0x92, 0x8F], "no seek table: every byte is under a frame checksum")
        let plain = try SidecarManifest.read(item.manifestName, from: storage)
        let manifest = try Manifest.parse(plain)
        XCTAssertEqual(manifest.summary.id, item.id)
        XCTAssertEqual(manifest.entries.count, 4)
        // The first frame decompresses to the summary line alone.
        let firstFrame = try XCTUnwrap(stored.withUnsafeBytes { ZstdContext.frameCompressedSize($0) })
        let decoder = try ZstdContext(.decompression)
        var output = [UInt8](repeating: 0, count: plain.count)
        let size = try output.withUnsafeMutableBytes { out in
            try stored.withUnsafeBytes { try decoder.decompress(UnsafeRawBufferPointer(rebasing: $0[0..<firstFrame]), into: out).get() }
        }
        let newline = try XCTUnwrap(plain.firstIndex(of: 0x0A))
        XCTAssertEqual(Array(output[0..<size]), Array(plain[...newline]))
    }

    func testADamagedCompressedManifestIsListedWithAProblem() throws {
        let item = try BackupCatalog(storage: storage).resolve("latest")
        var stored = try storage.readObject(item.manifestName)
        stored[stored.count / 2] ^= 0x5A
        try storage.delete(item.manifestName)
        let pending = try storage.create(item.manifestName)
        try stored.withUnsafeBytes { try pending.write($0) }
        try pending.commit()

        let catalog = BackupCatalog(storage: storage)
        XCTAssertThrowsError(try catalog.manifest(of: try catalog.resolve(item.id.rawValue))) { error in
            guard case .manifestUnreadable(let name, let reason)? = error as? EngineError else { return XCTFail("\(error)") }
            XCTAssertEqual(name, item.manifestName)
            XCTAssertTrue(reason.contains("compressed bytes are damaged"), reason)
        }
    }

    func testAPlainManifestBesideACompressedOneIsNotASecondBackup() throws {
        let item = try BackupCatalog(storage: storage).resolve("latest")
        let plainName = String(item.manifestName.dropLast(4))
        try storeManifest(named: plainName, String(decoding: try SidecarManifest.read(item.manifestName, from: storage), as: UTF8.self))
        let items = try BackupCatalog(storage: storage).items()
        XCTAssertEqual(items.map(\.id), idsOldestFirst)
        XCTAssertEqual(items.last?.manifestName, item.manifestName)
    }

    func testAPlainManifestFromAnOlderKeepsakeIsRead() throws {
        let item = try BackupCatalog(storage: storage).resolve("latest")
        let plain = try SidecarManifest.read(item.manifestName, from: storage)
        try storage.delete(item.manifestName)
        try storeManifest(named: String(item.manifestName.dropLast(4)), String(decoding: plain, as: UTF8.self))
        let catalog = BackupCatalog(storage: storage)
        let listed = try catalog.resolve("latest")
        XCTAssertEqual(listed.id, item.id)
        XCTAssertTrue(listed.manifestName.hasSuffix(".manifest.jsonl"), listed.manifestName)
        XCTAssertEqual(try catalog.manifest(of: listed).entries.count, 4)
    }

    func testARestoreOfOneFileReadsOnlyItsEntry() throws {
        let catalog = BackupCatalog(storage: storage)
        let item = try catalog.resolve("latest")
        let whole = try catalog.manifest(of: item)
        let note = try XCTUnwrap(whole.entries.first { $0.displayPath.hasSuffix("/note.txt") })
        let partial = try catalog.manifest(of: item, forRestoring: [note.displayPath])
        XCTAssertEqual(partial.entries, [note])
        XCTAssertEqual(partial.summary.id, whole.summary.id)
        XCTAssertEqual(try catalog.manifest(of: item, forRestoring: []).entries, whole.entries, "no selection: everything")
    }

    // MARK: Names and summaries agree (issue 26 §2)

    func testAManifestNameGivesItsHostAndIDOneWayOnly() throws {
        let id = try XCTUnwrap(BackupID("20261129T023000Z-3f9a1c2e"))
        for suffix in BackupNaming.manifestSuffixes {
            XCTAssertEqual(BackupNaming.parts(ofManifestName: "web-1.lan_\(id)" + suffix)?.host, "web-1.lan")
            XCTAssertEqual(BackupNaming.parts(ofManifestName: "web-1.lan_\(id)" + suffix)?.id, id)
        }
        for name in ["\(id).manifest.jsonl.zst", "_\(id).manifest.jsonl.zst", "a_b_\(id).manifest.jsonl.zst",
                     "web\(id).manifest.jsonl.zst", "web_\(id).tar.zst", "web_20261129T023000Z-3f9a1c2.manifest.jsonl.zst"] {
            XCTAssertNil(BackupNaming.parts(ofManifestName: name), name)
        }
    }

    func testASummaryStoredUnderAnotherNameIsMisnamedAndNeverLatest() throws {
        let newest = try XCTUnwrap(results.max { $0.summary.id < $1.summary.id })
        let manifestName = try XCTUnwrap(newest.manifestName)
        let bytes = try storage.readObject(manifestName)
        let host = HostIdentity.fileSafeHostName
        // Another host and id than its summary's; its host, another id.
        let planted = ["evil_20991231T235959Z-00000001.manifest.jsonl.zst", "\(host)_20991231T235959Z-00000002.manifest.jsonl.zst"]
        for name in planted { try storage.writeObject(name, bytes: bytes) }
        let items = try BackupCatalog(storage: storage).items()
        let misnamed = items.filter(\.isMisnamed)
        XCTAssertEqual(Set(misnamed.map(\.manifestName)), Set(planted))
        XCTAssertTrue(misnamed.allSatisfy { $0.summary == nil && $0.problem?.contains("its name says") == true }, "\(misnamed)")
        XCTAssertEqual(try BackupCatalog(storage: storage).resolve("latest", now: dates[2]).id, newest.summary.id)

        var summary = newest.summary
        summary.archive?.name = "\(host)_\(idsOldestFirst[0]).tar.zst"
        XCTAssertEqual(BackupCatalog.disagreement(summary, manifestName: manifestName),
                       "its summary names the archive \(host)_\(idsOldestFirst[0]).tar.zst where its own is "
                        + "\(host)_\(summary.id).tar.zst")
        // A host's cache keeps the plain manifest of an encrypted backup: its own archive either way.
        summary.archive?.name = "\(host)_\(summary.id).tar.zst.age"
        XCTAssertNil(BackupCatalog.disagreement(summary, manifestName: manifestName))
    }

    func testTwoManifestsOfOneIDAreBothMisnamedAndTheIDIsRefused() throws {
        let first = results[0]
        try storage.writeObject("other_\(first.summary.id).manifest.jsonl.zst",
                                bytes: try storage.readObject(try XCTUnwrap(first.manifestName)))
        let items = try BackupCatalog(storage: storage).items()
        XCTAssertEqual(items.filter(\.isMisnamed).count, 2)
        XCTAssertEqual(items.filter { !$0.isMisnamed }.count, 2, "the other backups are listed as before")
        XCTAssertThrowsError(try BackupCatalog(storage: storage).resolve(first.summary.id.rawValue)) { error in
            XCTAssertTrue("\(error)".contains("other_\(first.summary.id).manifest.jsonl.zst"), "\(error)")
        }
    }

    func testLatestPassesOverABackupDatedADayAfterTheClock() throws {
        let catalog = BackupCatalog(storage: storage)
        let ids = idsOldestFirst
        // The newest is dated day 40: a clock at day 38 is two days behind it.
        XCTAssertEqual(try catalog.resolve("latest", now: dates[2].addingTimeInterval(-2 * 86_400)).id, ids[1])
        XCTAssertEqual(try catalog.resolve("latest", now: dates[2].addingTimeInterval(-3_600)).id, ids[2], "an hour apart is allowed")
        XCTAssertEqual(try catalog.newestID(notAfter: dates[0]), ids[1])
        XCTAssertEqual(try catalog.newestID(), ids[2])
        XCTAssertThrowsError(try catalog.resolve("latest", now: dates[0].addingTimeInterval(-3 * 86_400))) { error in
            XCTAssertTrue("\(error)".contains("check the clock"), "\(error)")
        }
    }

    func testOtherObjectsAreIgnored() throws {
        try storeManifest(named: "notes.txt", "hello")
        try storeManifest(named: "vm_not-an-id.manifest.jsonl", "garbage")
        XCTAssertEqual(try BackupCatalog(storage: storage).items().map(\.id), idsOldestFirst)
    }
}
