import Foundation
@testable import KeepsakeModel
import XCTest

/// A supplement's manifest (`SupplementManifest`): what it writes reads back the same, and
/// what Keepsake never writes is refused with the line and the reason.
final class SupplementManifestTests: KeepsakeTestCase {
    // MARK: Fixtures

    private let sha = String(repeating: "0123456789abcdef", count: 4)
    private let owner = BackupID("20270110T020000Z-0000000a")!
    private let origin = BackupID("20270103T020000Z-0000000b")!

    private func entry(_ path: String, from: BackupID?, at: Int64? = 0, length: Int64? = 1536) -> ManifestEntry {
        var entry = ManifestEntry(path: Array(path.utf8), type: .file, size: 1000, mode: 0o644, uid: 1000, gid: 1000,
                                  mtimeNanoseconds: 1_798_761_600_000_000_000, sha256: sha, storedIn: from)
        entry.archiveOffset = at
        entry.archiveLength = length
        return entry
    }

    private func manifest(_ entries: [ManifestEntry]) -> SupplementManifest {
        SupplementManifest(id: BackupID("20270111T030000Z-0000000c")!, host: "box", owner: owner,
                           created: Date(timeIntervalSince1970: 1_799_636_400), archiveName: "box_20270111T030000Z-0000000c.supplement.tar.zst",
                           archiveSize: 4096, archiveSHA256: sha, entries: entries)
    }

    /// The lines with line `number` (1-based) replaced by `text`.
    private func replacing(line number: Int, with text: String, in manifest: SupplementManifest) -> [UInt8] {
        var lines = String(decoding: manifest.encoded(), as: UTF8.self).split(separator: "\n").map(String.init)
        lines[number - 1] = text
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    // MARK: Tests

    func testWhatItWritesReadsBackTheSame() throws {
        let written = manifest([entry("home/ana/a.txt", from: origin), entry("home/ana/\u{e9}t\u{e9}.txt", from: origin, at: 1536),
                                entry("home/ana/a.txt", from: BackupID("20270104T020000Z-0000000d")!, at: 3072)])
        XCTAssertEqual(try SupplementManifest.parse(written.encoded()), written)
        // The copy inside the archive leaves the archive's size and SHA-256 to whoever reads it.
        let inner = written.encoded(inner: true)
        XCTAssertFalse(String(decoding: inner, as: UTF8.self).contains("\"size\":4096,\"sha256\""))
        XCTAssertThrowsError(try SupplementManifest.parse(inner))
        XCTAssertEqual(try SupplementManifest.parse(inner, archive: (4096, sha)), written)
        XCTAssertTrue(String(decoding: written.encoded(), as: UTF8.self).hasPrefix("{\"supplement\":1,"))
    }

    func testWhatKeepsakeNeverWritesIsRefusedNamingTheLine() throws {
        let good = manifest([entry("a", from: origin)])
        let cases: [(String, [UInt8], String)] = [
            ("empty", [], "empty"),
            ("a backup's manifest", Array("{\"format\":1}\n".utf8), "supplement"),
            ("a newer format", replacing(line: 1, with: "{\"supplement\":2}", in: good), "format"),
            ("no owner", replacing(line: 1, with: "{\"supplement\":1,\"id\":\"20270111T030000Z-0000000c\",\"host\":\"box\"}", in: good),
             "owner"),
        ]
        for (label, bytes, expected) in cases {
            XCTAssertThrowsError(try SupplementManifest.parse(bytes), label) { error in
                XCTAssertTrue("\(error)".lowercased().contains(expected), "\(label): \(error)")
            }
        }
        let lines: [(String, ManifestEntry, String)] = [
            ("a file with no origin", entry("a", from: nil), "'in'"),
            ("a file not placed", entry("a", from: origin, at: nil, length: nil), "'at'"),
            ("a file from its owner", entry("a", from: owner), "not older"),
            ("a file from a newer backup", entry("a", from: BackupID("20270112T020000Z-0000000e")!), "not older"),
        ]
        for (label, line, expected) in lines {
            XCTAssertThrowsError(try SupplementManifest.parse(manifest([line]).encoded()), label) { error in
                XCTAssertTrue("\(error)".contains("line 2") && "\(error)".contains(expected), "\(label): \(error)")
            }
        }
        XCTAssertThrowsError(try SupplementManifest.parse(manifest([entry("a", from: origin), entry("a", from: origin, at: 1536)]).encoded())) {
            XCTAssertTrue("\($0)".contains("line 3") && "\($0)".contains("twice"), "\($0)")
        }
    }

    func testItsNamesAreNeitherABackupsArchiveNorItsManifest() {
        let id = BackupID("20270111T030000Z-0000000c")!
        let archive = SupplementNaming.archiveName(host: "box", id: id)
        let manifest = SupplementNaming.manifestName(host: "box", id: id)
        XCTAssertEqual(archive, "box_20270111T030000Z-0000000c.supplement.tar.zst")
        XCTAssertEqual(manifest, "box_20270111T030000Z-0000000c.supplement.jsonl.zst")
        XCTAssertNil(BackupNaming.id(fromManifestName: manifest))
        XCTAssertFalse(BackupNaming.isManifestName(manifest))
        XCTAssertNil(BackupNaming.id(fromManifestName: (BackupNaming.stem(of: archive) ?? "") + BackupNaming.manifestSuffix))
        XCTAssertEqual(SupplementNaming.parts(ofManifestName: manifest)?.id, id)
        XCTAssertEqual(SupplementNaming.parts(ofArchiveName: archive)?.host, "box")
        XCTAssertEqual(SupplementNaming.manifestName(forArchive: archive), manifest)
        XCTAssertNil(SupplementNaming.parts(ofManifestName: "box_" + id.rawValue + BackupNaming.manifestSuffix))
    }

    /// Encrypted: both names end in `.age`, neither is a backup's; the summary in the clear
    /// beside them says what the supplement holds by backup and reads back the same; a
    /// manifest whose archive name and encryption disagree is refused.
    func testAnEncryptedSupplementsNamesAndSummary() throws {
        let id = BackupID("20270111T030000Z-0000000c")!
        let archive = SupplementNaming.archiveName(host: "box", id: id, encrypted: true)
        let manifestName = SupplementNaming.manifestName(host: "box", id: id, encrypted: true)
        XCTAssertEqual(archive, "box_20270111T030000Z-0000000c.supplement.tar.zst.age")
        XCTAssertEqual(manifestName, "box_20270111T030000Z-0000000c.supplement.jsonl.zst.age")
        XCTAssertEqual(SupplementNaming.summaryName(host: "box", id: id), "box_20270111T030000Z-0000000c.supplement.summary.json")
        XCTAssertFalse(BackupNaming.isManifestName(manifestName))
        XCTAssertNil(BackupNaming.id(fromManifestName: (BackupNaming.stem(of: archive) ?? "") + BackupNaming.manifestSuffix))
        XCTAssertEqual(SupplementNaming.parts(ofManifestName: manifestName)?.id, id)
        XCTAssertEqual(SupplementNaming.parts(ofArchiveName: archive)?.id, id)
        XCTAssertEqual(SupplementNaming.parts(ofSummaryName: "box_20270111T030000Z-0000000c.supplement.summary.json")?.host, "box")
        XCTAssertEqual(SupplementNaming.manifestName(forArchive: archive), manifestName)

        let second = BackupID("20270104T020000Z-0000000d")!
        var encrypted = manifest([entry("a", from: origin), entry("b", from: second, at: 1536), entry("c", from: origin, at: 3072)])
        encrypted.archiveName = archive
        encrypted.encryption = .recipients(["age1qqqq", "age1pppp"])
        XCTAssertEqual(encrypted.manifestName, manifestName)
        XCTAssertEqual(try SupplementManifest.parse(encrypted.encoded()), encrypted)
        let summary = encrypted.summary
        XCTAssertEqual(summary.holds, [origin, second])
        let text = String(decoding: summary.encoded(), as: UTF8.self)
        XCTAssertFalse(text.contains("\"a\"") || text.contains("sha256\":\"\(sha)\",\"size"), "no file in the clear: \(text)")
        XCTAssertEqual(try SupplementSummary.parse(summary.encoded()), summary)
        XCTAssertEqual(summary.summaryName, "box_20270111T030000Z-0000000c.supplement.summary.json")

        // Disagreeing: an .age archive without encryption, or encryption in the clear.
        var plainNamed = encrypted
        plainNamed.archiveName = SupplementNaming.archiveName(host: "box", id: id)
        XCTAssertThrowsError(try SupplementManifest.parse(plainNamed.encoded()))
        var unencrypted = encrypted
        unencrypted.encryption = nil
        XCTAssertThrowsError(try SupplementManifest.parse(unencrypted.encoded()))
        // A summary holding its owner's own files, or one in the clear of a clear supplement.
        var forged = summary
        forged.holds.insert(owner)
        XCTAssertThrowsError(try SupplementSummary.parse(forged.encoded()))
        XCTAssertThrowsError(try SupplementSummary.parse(manifest([entry("a", from: origin)]).summary.encoded()))
    }
}
