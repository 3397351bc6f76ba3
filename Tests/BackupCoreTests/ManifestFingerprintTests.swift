import Foundation
import KeepsakeJSON
@testable import KeepsakeModel
import XCTest

@testable import BackupCore

/// `verify` compares the archive's own manifest with the one beside it through fingerprints.
final class ManifestFingerprintTests: KeepsakeTestCase {
    // MARK: Fixtures

    private func manifest(archive: BackupSummary.ArchiveFacts?, sizes: [Int64] = [1, 22, 333]) -> [UInt8] {
        var writer = JSONWriter()
        var summary = BackupSummary(id: BackupID("20261129T162535Z-73787fa1")!, created: Date(timeIntervalSince1970: 0),
                                    host: "h", user: "u", sources: ["/"], tags: [], compression: .zstd, level: 3,
                                    fileCount: Int64(sizes.count), toolVersion: "test")
        summary.archive = archive
        writer.value(summary.json)
        writer.endLine()
        for (index, size) in sizes.enumerated() {
            ManifestEntry(path: Array("dir/file-\(index)".utf8), type: .file, size: size).write(to: &writer)
            writer.endLine()
        }
        return writer.bytes
    }

    private let facts = BackupSummary.ArchiveFacts(name: "h_20261129T162535Z-73787fa1.tar.zst", size: 999,
                                                   sha256: String(repeating: "c", count: 64))

    /// The fingerprint of `bytes` fed in pieces of growing size.
    private func fedInPieces(_ bytes: [UInt8]) -> ManifestFingerprint {
        let fingerprint = ManifestFingerprint()
        var offset = 0, piece = 1
        while offset < bytes.count {
            let end = min(bytes.count, offset + piece)
            bytes[offset..<end].withUnsafeBytes { fingerprint.update($0) }
            offset = end
            piece = piece * 2 + 1
        }
        fingerprint.finish()
        return fingerprint
    }

    private func beside(_ bytes: [UInt8]) -> ManifestFingerprint {
        ManifestFingerprint(of: bytes)
    }

    // MARK: Tests

    func testTheCopyInsideMatchesTheCopyBesideHoweverItIsRead() {
        XCTAssertTrue(beside(manifest(archive: facts)).matches(inside: fedInPieces(manifest(archive: nil))))
    }

    func testAnyDifferenceInTheEntriesIsSeen() {
        let inside = fedInPieces(manifest(archive: nil, sizes: [1, 22, 334]))
        XCTAssertFalse(beside(manifest(archive: facts)).matches(inside: inside))
        let shorter = fedInPieces(manifest(archive: nil, sizes: [1, 22]))
        XCTAssertFalse(beside(manifest(archive: facts)).matches(inside: shorter))
    }

    func testTheSummaryLinesMustAgreeButForTheArchiveFacts() {
        var damaged = manifest(archive: nil)
        let text = String(decoding: damaged, as: UTF8.self)
        let host = text.utf8.distance(from: text.utf8.startIndex, to: text.range(of: "\"host\":\"h\"")!.lowerBound)
        damaged[host + 1] = UInt8(ascii: "H")
        XCTAssertFalse(beside(manifest(archive: facts)).matches(inside: fedInPieces(damaged)))
        XCTAssertFalse(beside(manifest(archive: nil)).matches(inside: fedInPieces(manifest(archive: nil))),
                       "a copy beside without archive facts is not a copy beside")
    }

    func testAManifestWithoutALineEndNeverMatches() {
        let unended = Array(#"{"keepsake":"manifest"}"#.utf8)
        XCTAssertFalse(beside(unended).matches(inside: fedInPieces(unended)))
    }
}
