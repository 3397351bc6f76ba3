import Foundation
@testable import KeepsakeArchive
@testable import KeepsakeModel
@testable import KeepsakeStorage
@testable import KeepsakeScan
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// `BackupSearch`: gitignore-style patterns over archive paths, and a search through every
/// backup of a real destination.
final class BackupSearchTests: KeepsakeTestCase {
    // MARK: Setup

    private var root = ""
    private var source = ""
    private var storage: LocalFolderBackend!
    private var ids: [BackupID] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        root = try makeTemporaryDirectory("search")
        source = root + "/src"
        storage = LocalFolderBackend(path: root + "/dest")
        ids = []
        try writeFile(source + "/notes.txt", "version 1\n")
        try writeFile(source + "/docs/report.pdf", "pdf 1\n")
        try writeFile(source + "/docs/deeper/notes.txt", "deeper notes\n")
        ids.append(try backup(days: 1))
        try writeFile(source + "/notes.txt", "version 2, longer\n")
        try writeFile(source + "/docs/other.pdf", "pdf 2\n")
        ids.append(try backup(days: 2))
        XCTAssertEqual(unlink(source + "/notes.txt"), 0)
        ids.append(try backup(days: 3))
    }

    override func tearDownWithError() throws {
        storage = nil
        removeTemporaryDirectory(root)
        try super.tearDownWithError()
    }

    private func backup(days: Double) throws -> BackupID {
        let engine = BackupEngine(storage: storage, events: nil, cancellation: CancellationFlag())
        return try engine.run(BackupRequest(sources: [source], scan: try noExcludes(), toolVersion: "test",
                                            now: fixedDate(days: days))).summary.id
    }

    private func search(_ pattern: String) throws -> BackupSearch.Result {
        try BackupSearch(pattern: pattern).search(BackupCatalog(storage: storage))
    }

    /// `(backup index, path relative to the source)` for every match.
    private func found(_ result: BackupSearch.Result) -> [String] {
        result.matches.map { match in
            let index = ids.firstIndex(of: match.backup.id) ?? -1
            let prefix = String(source.dropFirst()) + "/"
            let path = match.entry.displayPath
            return "\(index):" + (path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path)
        }
    }

    // MARK: Matching one entry

    func testPatternRules() throws {
        func matches(_ pattern: String, _ path: String, type: EntryType = .file) throws -> Bool {
            try BackupSearch(pattern: pattern).matches(ManifestEntry(path: PathBytes.from(path), type: type))
        }
        XCTAssertTrue(try matches("notes.txt", "home/ana/notes.txt"))
        XCTAssertTrue(try matches("notes.txt", "notes.txt"))
        XCTAssertFalse(try matches("notes.txt", "home/ana/notes.txt.bak"))
        XCTAssertTrue(try matches("*.pdf", "home/ana/docs/a b.pdf"))
        XCTAssertFalse(try matches("*.pdf", "home/ana/docs.pdf/inner"), "a name pattern tests the last component")
        XCTAssertTrue(try matches("home/ana/notes.txt", "home/ana/notes.txt"))
        XCTAssertTrue(try matches("/home/ana/notes.txt", "home/ana/notes.txt"), "the leading slash is optional")
        XCTAssertFalse(try matches("ana/notes.txt", "home/ana/notes.txt"), "a pattern with a slash is anchored")
        XCTAssertTrue(try matches("**/ana/notes.txt", "home/ana/notes.txt"))
        XCTAssertTrue(try matches("home/*/notes.txt", "home/bo/notes.txt"))
        XCTAssertTrue(try matches("home/ana/**", "home/ana/a/b/c"))
        XCTAssertFalse(try matches("home/ana/**", "home/ana"))
        XCTAssertTrue(try matches("docs/", "x/docs", type: .directory))
        XCTAssertFalse(try matches("docs/", "x/docs", type: .file), "a trailing slash matches folders only")
        XCTAssertTrue(try matches("!important.txt", "a/!important.txt"), "a leading ! is literal in a search")
        XCTAssertFalse(try matches("!important.txt", "a/other.txt"))
    }

    func testNonUTF8Names() throws {
        let path = Array("home/u/bad".utf8) + [0xff] + Array(".txt".utf8)
        let entry = ManifestEntry(path: path, type: .file)
        XCTAssertTrue(try BackupSearch(pattern: "bad?.txt").matches(entry), "an invalid byte is one character")
        XCTAssertTrue(try BackupSearch(pattern: "*.txt").matches(entry))
        XCTAssertTrue(try BackupSearch(pattern: "home/u/*").matches(entry))
    }

    func testInvalidPatternsAreRejected() {
        for pattern in ["", "[a", "/", "a\\"] {
            XCTAssertThrowsError(try BackupSearch(pattern: pattern), pattern) { error in
                XCTAssertEqual((error as? ExcludePatternError)?.pattern, pattern)
            }
        }
    }

    // MARK: Searching backups

    func testNameFoundInEveryBackupOldestFirst() throws {
        let result = try search("notes.txt")
        XCTAssertEqual(found(result), ["0:docs/deeper/notes.txt", "0:notes.txt", "1:docs/deeper/notes.txt", "1:notes.txt",
                                       "2:docs/deeper/notes.txt"])
        XCTAssertEqual(result.searchedCount, 3)
        XCTAssertEqual(result.backupIDs, ids)
        XCTAssertTrue(result.skipped.isEmpty)
        let versions = result.matches.filter { $0.entry.displayPath.hasSuffix("src/notes.txt") }
        XCTAssertEqual(versions.map(\.entry.size), [10, 18])
        XCTAssertNotEqual(versions.first?.entry.sha256, versions.last?.entry.sha256)
        XCTAssertEqual(versions.first?.entry.sha256?.count, 64)
    }

    func testGlobAndAnchoredPatterns() throws {
        XCTAssertEqual(found(try search("*.pdf")), ["0:docs/report.pdf", "1:docs/other.pdf", "1:docs/report.pdf",
                                                  "2:docs/other.pdf", "2:docs/report.pdf"])
        XCTAssertEqual(found(try search(source + "/notes.txt")), ["0:notes.txt", "1:notes.txt"])
        XCTAssertEqual(found(try search(String(source.dropFirst()) + "/docs/*.pdf")).count, 5)
        XCTAssertEqual(found(try search("deeper/")), ["0:docs/deeper", "1:docs/deeper", "2:docs/deeper"])
    }

    func testNoMatch() throws {
        let result = try search("missing.txt")
        XCTAssertTrue(result.matches.isEmpty)
        XCTAssertEqual(result.searchedCount, 3)
    }

    func testEmptyDestination() throws {
        let result = try BackupSearch(pattern: "x").search(BackupCatalog(storage: LocalFolderBackend(path: root + "/none")))
        XCTAssertTrue(result.matches.isEmpty)
        XCTAssertEqual(result.searchedCount, 0)
    }

    func testUnreadableManifestsAreSkipped() throws {
        let names = try storage.list().map(\.name).filter { $0.hasSuffix(".manifest.jsonl.zst") }.sorted()
        XCTAssertEqual(names.count, 3)
        // The middle backup's manifest: a good first line, then a broken entry line.
        let middle = names[1]
        var bytes = try SidecarManifest.read(middle, from: storage)
        bytes += Array("{not json\n".utf8)
        try overwrite(middle, with: bytes)
        // The newest: not a manifest at all.
        try overwrite(names[2], with: Array("garbage\n".utf8))

        let result = try search("notes.txt")
        XCTAssertEqual(found(result), ["0:docs/deeper/notes.txt", "0:notes.txt"])
        XCTAssertEqual(result.searchedCount, 1)
        XCTAssertEqual(result.skipped.map(\.id), [ids[1], ids[2]])
        for skipped in result.skipped { XCTAssertFalse(skipped.reason.isEmpty) }
    }

    func testCancellation() throws {
        let flag = CancellationFlag()
        flag.cancel()
        XCTAssertThrowsError(try BackupSearch(pattern: "x").search(BackupCatalog(storage: storage), cancellation: flag)) { error in
            XCTAssertEqual(error as? Interruption, Interruption())
        }
    }

    private func overwrite(_ name: String, with bytes: [UInt8]) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: root + "/dest/" + name))
    }
}
