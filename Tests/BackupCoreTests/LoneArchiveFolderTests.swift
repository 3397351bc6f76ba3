import Foundation
import KeepsakeAge
@testable import KeepsakeModel
@testable import KeepsakeStorage
@testable import KeepsakeEncryption
import XCTest
@testable import BackupCore

/// The folder holding a lone archive reads like any destination and cannot be written.
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

    func testIsOnlyReadableAndItsNamesArePeoples() throws {
        try write("a.tar.zst", [1])
        let folder = LoneArchiveFolder(path: root)
        // Nothing can store, delete or lock beside a lone archive: it has no such calls
        // (`ReadableStorage` only), which the compiler holds every caller to.
        XCTAssertFalse((folder as AnyObject) is any WritableStorage)
        XCTAssertEqual(folder.naming, .foreign, "an object's first bytes say what it is, not its name")
        XCTAssertNil(folder.localFolder, "never taken for a destination folder to leave out of a scan")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: root), ["a.tar.zst"])
    }

    func testAKeyringOpensAgeFilesByContentBesideALoneArchiveAndByNameInADestination() throws {
        let identity = try AgeIdentity.generate()
        let plaintext = AgeTestBytes.pattern(200_000)
        let encrypted = try AgeTestBytes.encrypt(plaintext, .recipients([identity.recipient]))
        // A person renamed the file: beside a lone archive its first bytes say it is age.
        try write("renamed.tar.zst", encrypted)
        try write("plain.tar.zst", plaintext)
        let keyring = AgeKeyring(identities: [identity])
        let lone = KeyedStorage(LoneArchiveFolder(path: root), keyring: keyring)
        XCTAssertEqual(try lone.readObject("renamed.tar.zst"), plaintext)
        XCTAssertEqual(try lone.readObject("plain.tar.zst"), plaintext)
        XCTAssertEqual(try lone.stored.readObject("renamed.tar.zst"), encrypted, "`stored` is the bytes as stored")
        let ranged = try lone.open("renamed.tar.zst")
        defer { ranged.close() }
        XCTAssertEqual(try ranged.bytes(at: 150_000, count: 10), Array(plaintext[150_000..<150_010]))

        // In a destination, names are Keepsake's: only `.age` objects are decrypted (no read
        // of every object's first bytes), so the same bytes under another name are as stored.
        let destination = LocalFolderBackend(path: root + "/dest")
        try destination.prepare()
        try destination.writeObject("h_20261206T000000Z-00000001.tar.zst", bytes: encrypted)
        try destination.writeObject("h_20261206T000000Z-00000001.tar.zst.age", bytes: encrypted)
        let keyed = KeyedStorage(destination, keyring: keyring)
        XCTAssertEqual(try keyed.readObject("h_20261206T000000Z-00000001.tar.zst"), encrypted)
        XCTAssertEqual(try keyed.readObject("h_20261206T000000Z-00000001.tar.zst.age"), plaintext)
        XCTAssertThrowsError(try KeyedStorage(destination, keyring: .empty).readObject("h_20261206T000000Z-00000001.tar.zst.age"),
                             "without a key an encrypted object does not open") { error in
            XCTAssertTrue(error is EncryptionError, "\(error)")
        }
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
