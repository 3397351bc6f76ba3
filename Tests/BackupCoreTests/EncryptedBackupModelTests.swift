import Foundation
import KeepsakeJSON
@testable import KeepsakeModel
import XCTest

@testable import BackupCore

/// The pieces of an encrypted backup that need no crypto: object names, the summary in the
/// clear, and the change-detection cache.
final class EncryptedBackupModelTests: KeepsakeTestCase {
    private let id = BackupID("20261202T023000Z-3f9a1c2e")!

    // MARK: Names

    func testEncryptedObjectsAreNamedAndRecognised() throws {
        let archive = BackupNaming.archiveName(host: "web", id: id, compression: .zstd, encrypted: true)
        let manifest = BackupNaming.manifestName(host: "web", id: id, encrypted: true)
        XCTAssertEqual(archive, "web_20261202T023000Z-3f9a1c2e.tar.zst.age")
        XCTAssertEqual(manifest, "web_20261202T023000Z-3f9a1c2e.manifest.jsonl.zst.age")
        XCTAssertEqual(BackupNaming.id(fromManifestName: manifest), id)
        XCTAssertTrue(BackupNaming.isManifestName(manifest))
        XCTAssertFalse(BackupNaming.isManifestName(archive))
        let summary = try XCTUnwrap(BackupNaming.publicSummaryName(forManifest: manifest))
        XCTAssertEqual(summary, "web_20261202T023000Z-3f9a1c2e.summary.json")
        XCTAssertNil(BackupNaming.publicSummaryName(forManifest: BackupNaming.manifestName(host: "web", id: id)))
        for name in [archive, manifest, summary] {
            XCTAssertEqual(BackupNaming.stem(of: name), "web_20261202T023000Z-3f9a1c2e", name)
        }
        XCTAssertEqual(BackupNaming.sidecarNames(forArchive: archive).first, manifest, "an encrypted archive's manifest is looked for first")
        XCTAssertEqual(BackupNaming.sidecarNames(forArchive: summary), [])
    }

    // MARK: Summaries

    func testTheSummaryInTheClearHoldsNoSourcesAndReadsBack() throws {
        var summary = BackupSummary(id: id, created: Date(timeIntervalSince1970: 1_764_000_000), host: "web", user: "root",
                                    sources: ["/srv/secret-project"], tags: ["nightly"], compression: .zstd, level: 3,
                                    fileCount: 12, originalBytes: 4096, toolVersion: "keepsake test",
                                    archive: .init(name: "web_x.tar.zst.age", size: 999, sha256: String(repeating: "ab", count: 32)))
        summary.encryption = .recipients(["age1a", "age1b"])
        summary.sourceSet = String(repeating: "0f", count: 16)
        let full = try BackupSummary(json: summary.json)
        XCTAssertEqual(full, summary)

        let open = summary.publicSummary
        let text = open.json.serialized()
        XCTAssertFalse(text.contains("secret-project"), text)
        let parsed = try Manifest.parseSummary(Array(text.utf8))
        XCTAssertTrue(parsed.sourcesHidden)
        XCTAssertEqual(parsed.sources, [])
        XCTAssertEqual(parsed.encryption, .recipients(["age1a", "age1b"]))
        XCTAssertEqual(parsed.archive, summary.archive)
        XCTAssertEqual(parsed.sourceGroup, ["encrypted source set " + String(repeating: "0f", count: 16)])

        summary.encryption = .passphrase
        XCTAssertEqual(try BackupSummary(json: summary.json).encryption, .passphrase)
    }

    func testAnUnknownEncryptionOrABadSourceSetIsADamagedSummary() throws {
        let good = BackupSummary(id: id, created: Date(), host: "h", user: "u", sources: [], tags: [], compression: .zstd,
                                 level: nil, toolVersion: "t").json
        for (key, value) in [("encryption", JSONValue.object(JSONObject([("format", .string("gpg"))]))),
                             ("source_set", JSONValue.string("../../etc"))] {
            guard case .object(var object) = good else { return XCTFail("not an object") }
            object[key] = value
            XCTAssertThrowsError(try BackupSummary(json: .object(object)), key)
        }
    }

    func testChainsKeepTheirKeys() {
        XCTAssertTrue(BackupEncryption.recipients(["a", "b"]).canShareChain(with: .recipients(["b", "a"])))
        XCTAssertFalse(BackupEncryption.recipients(["a"]).canShareChain(with: .recipients(["a", "b"])))
        XCTAssertFalse(BackupEncryption.passphrase.canShareChain(with: .recipients(["a"])))
        XCTAssertTrue(BackupEncryption.passphrase.canShareChain(with: .passphrase))
    }

    // MARK: The cache

    func testTheCacheIsOwnerOnlyAndKeepsTheNewestOfWhatTheDestinationHolds() throws {
        let base = try makeTemporaryDirectory("cache")
        defer { removeTemporaryDirectory(base) }
        let root = base + "/deeper/keepsake"
        let cache = ChangeDetectionCache(root: root, destination: "s3://bucket/prefix")
        var ids: [BackupID] = []
        for second in 0..<8 {
            let id = BackupID(String(format: "20261202T0230%02dZ-3f9a1c2e", second))!
            ids.append(id)
            let object = try XCTUnwrap(cache.begin("h_\(id.rawValue).manifest.jsonl.zst"))
            try [UInt8]("x".utf8).withUnsafeBytes { try object.write($0) }
            try object.commit()
        }
        XCTAssertEqual(lstatInfo(root).map { $0.st_mode & 0o777 }, 0o700)
        XCTAssertEqual(lstatInfo(cache.location).map { $0.st_mode & 0o777 }, 0o700)
        cache.trim(keeping: Set(ids.dropLast()))  // the newest is gone from the destination
        let kept = try cache.storage.list().compactMap { BackupNaming.id(fromManifestName: $0.name) }.sorted()
        XCTAssertEqual(kept, Array(ids[1..<7]), "the six newest the destination still holds")
        XCTAssertNotEqual(ChangeDetectionCache(root: root, destination: "s3://bucket/other").location, cache.location)
    }
}
