import Foundation
@testable import KeepsakeModel
@testable import KeepsakeStorage
import XCTest
@testable import BackupCore

/// The folder holding a lone archive reads like any destination and refuses every write.
final class LoneArchiveFolderTests: KeepsakeTestCase {
    // MARK: Setup

    private var root = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        root = try makeTemporaryDirectory("lone")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: root)
        try super.tearDownWithError()
    }

    private func write(_ name: String, _ bytes: [UInt8]) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: root + "/" + name))
    }

    // MARK: Tests

    func testListsRegularFilesAndReadsThemFrontToBackAndAtOffsets() throws {
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try write("host_20261129T023000Z-3f9a1c2e.tar.zst", bytes)
        try write(".hidden-copy.tar.zst", [1, 2, 3])
        try FileManager.default.createDirectory(atPath: root + "/folder", withIntermediateDirectories: false)
        XCTAssertEqual(symlink(root + "/host_20261129T023000Z-3f9a1c2e.tar.zst", root + "/latest.tar.zst"), 0)
        let folder = LoneArchiveFolder(path: root)
        XCTAssertTrue(folder.isReadOnly)
        XCTAssertEqual(try folder.list().map(\.name),
                       [".hidden-copy.tar.zst", "host_20261129T023000Z-3f9a1c2e.tar.zst", "latest.tar.zst"],
                       "regular files, hidden ones and links to files included; no folders")
        // A link the user made is theirs to follow: this is not a destination.
        let source = try folder.open("latest.tar.zst")
        defer { source.close() }
        XCTAssertEqual(try source.size(), Int64(bytes.count))
        XCTAssertEqual(try source.bytes(at: 299_990, count: 50), Array(bytes[299_990...]))
        XCTAssertEqual(try source.readAll(limit: 1 << 20), bytes)
        XCTAssertThrowsError(try folder.open("folder"))
        XCTAssertThrowsError(try folder.open("../escape")) { XCTAssertTrue($0 is StorageError) }
        XCTAssertThrowsError(try folder.open("missing")) {
            XCTAssertEqual($0 as? StorageError, .notFound(name: "missing", destination: root))
        }
    }

    func testEveryWriteIsRefusedAndNothingChanges() throws {
        try write("a.tar.zst", [1])
        let folder = LoneArchiveFolder(path: root)
        let refusals: [(String, () throws -> Void)] = [
            ("create", { _ = try folder.create("b.tar.zst") }),
            ("delete", { try folder.delete("a.tar.zst") }),
            ("move", { try folder.move("a.tar.zst", to: "c.tar.zst") }),
            ("lock", { _ = try folder.acquireLock(.current(operation: "backup")) }),
        ]
        for (name, attempt) in refusals {
            XCTAssertThrowsError(try attempt(), name) { error in
                guard case .readOnly(let destination, _)? = error as? StorageError else { return XCTFail("\(name): \(error)") }
                XCTAssertEqual(destination, root)
                XCTAssertTrue("\(error)".contains("--dest"), "says what to do: \(error)")
            }
        }
        XCTAssertEqual(try folder.removeLeftovers(), [])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: root), ["a.tar.zst"])
    }

    func testLocatorFindsTheManifestBesideTheArchiveAndEarlierArchivesByName() throws {
        let (folder, name) = LoneArchiveFolder.holding(root + "/x.tar.zst")
        XCTAssertEqual(folder.path, root)
        XCTAssertEqual(name, "x.tar.zst")
        try write("web_20261129T023000Z-3f9a1c2e.tar.zst", [9, 9])
        try write("web_20261130T023000Z-00000001.tar.zst", [8])
        let located = try BackupLocator { throw EngineError.invalidRequest("no destination needed") }
            .locate(.archiveFile(root + "/web_20261130T023000Z-00000001.tar.zst"))
        XCTAssertTrue(located.isArchiveFile)
        XCTAssertNil(located.item, "no manifest beside it")
        XCTAssertEqual(located.label, root + "/web_20261130T023000Z-00000001.tar.zst")
        let earlier = try XCTUnwrap(try located.earlierArchive(try XCTUnwrap(BackupID("20261129T023000Z-3f9a1c2e"))))
        defer { earlier.source.close() }
        XCTAssertEqual(earlier.name, root + "/web_20261129T023000Z-3f9a1c2e.tar.zst")
        XCTAssertEqual(try earlier.source.readAll(limit: 10), [9, 9])
        XCTAssertNil(try located.earlierArchive(try XCTUnwrap(BackupID("20261128T023000Z-3f9a1c2e"))))
        XCTAssertThrowsError(try BackupLocator { throw EngineError.invalidRequest("unused") }.locate(.archiveFile(root + "/gone.tar.zst")))
    }
}
