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
            ("a newer format", replacing(line: 1, with: "{\"supplement\":3}", in: good), "format"),
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

    /// Held blocks (`HeldBlocks`): lines after the files, in a manifest of format 2 (what
    /// older versions refuse); what they write reads back the same, the summary names their
    /// backups, and every line Keepsake never writes is refused, naming the line.
    func testHeldBlocksReadBackAndWhatKeepsakeNeverWritesIsRefused() throws {
        let digests = (0..<5).flatMap { Array(repeating: UInt8($0), count: BlockTable.digestLength) }
        let held = HeldBlocks(origin: origin, path: Array("srv/disk.img".utf8), blockSize: 65536, indices: [0, 1, 2, 7, 9],
                              digests: digests, entrySize: 9 * 65536 + 100, archiveOffset: 1536, archiveLength: 200_000)
        let second = BackupID("20270104T020000Z-0000000d")!
        var other = held
        other.origin = second
        let written = SupplementManifest(id: BackupID("20270111T030000Z-0000000c")!, host: "box", owner: owner,
                                         created: Date(timeIntervalSince1970: 1_799_636_400),
                                         archiveName: "box_20270111T030000Z-0000000c.supplement.tar.zst", archiveSize: 4096,
                                         archiveSHA256: sha, entries: [entry("a", from: origin)], blocks: [held, other])
        let text = String(decoding: written.encoded(), as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("{\"supplement\":2,"), text)
        XCTAssertTrue(text.contains("\"runs\":[0,3,7,1,9,1]"), text)
        XCTAssertEqual(try SupplementManifest.parse(written.encoded()), written)
        XCTAssertEqual(written.summary.holds, [origin, second])
        XCTAssertEqual(held.regions.map(\.offset), [0, 7 * 65536, 9 * 65536])
        XCTAssertEqual(held.regions.map(\.length), [3 * 65536, 65536, 100])
        XCTAssertTrue(held.holds(7, digest: held.digest(of: 7) ?? []))
        XCTAssertNil(held.digest(of: 8))
        XCTAssertEqual(SupplementNaming.blocksEntryPath(origin: origin, path: held.path),
                       Array(".keepsake/blocks/\(origin.rawValue)/srv/disk.img".utf8))

        let line = String(text.split(separator: "\n")[2])
        let base64 = Data(digests).base64EncodedString()
        let cases: [(String, [UInt8], String)] = [
            ("blocks in format 1", replacing(line: 1, with: String(text.split(separator: "\n")[0]).replacingOccurrences(
                of: "\"supplement\":2", with: "\"supplement\":1"), in: written), "format 1"),
            ("files after blocks", Array((text + String(text.split(separator: "\n")[1]) + "\n").utf8), "before its blocks"),
            ("listed twice", Array((text + line + "\n").utf8), "twice"),
            ("runs out of order", Array(text.replacingOccurrences(of: "[0,3,7,1,9,1]", with: "[7,1,0,3,9,1]").utf8), "in order"),
            ("past the entry", Array(text.replacingOccurrences(of: "[0,3,7,1,9,1]", with: "[0,3,7,1,10,1]").utf8), "within"),
            ("not ending at its size", Array(text.replacingOccurrences(of: "[0,3,7,1,9,1]", with: "[0,3,7,1,8,1]").utf8), "ends"),
            // A trillion blocks said, sixteen bytes of digests each not given: refused, never counted out.
            ("a run of a trillion blocks", Array(text.replacingOccurrences(of: "\"size\":\(9 * 65536 + 100)", with: "\"size\":72057594037927936")
                .replacingOccurrences(of: "[0,3,7,1,9,1]", with: "[0,3,7,1,9,1099511627767]").utf8), "one digest"),
            ("a digest short", Array(text.replacingOccurrences(of: base64, with: Data(digests.dropLast(16)).base64EncodedString()).utf8),
             "one digest"),
            ("no place", Array(text.replacingOccurrences(of: "\"at\":1536,\"len\":200000,", with: "").utf8), "'at'"),
            ("an odd block size", Array(text.replacingOccurrences(of: "\"held_blocks\":{\"size\":65536", with: "\"held_blocks\":{\"size\":65537").utf8),
             "power of two"),
            ("blocks of its owner", Array(text.replacingOccurrences(of: "\"in\":\"\(second.rawValue)\"", with: "\"in\":\"\(owner.rawValue)\"").utf8),
             "not older"),
        ]
        for (label, bytes, expected) in cases {
            XCTAssertThrowsError(try SupplementManifest.parse(bytes), label) { error in
                XCTAssertTrue("\(error)".contains(expected), "\(label): \(error)")
            }
        }
    }
}
