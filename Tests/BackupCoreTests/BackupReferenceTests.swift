@testable import BackupCore
import XCTest

/// The rule that decides whether BACKUP is a backup or an archive file.
final class BackupReferenceTests: KeepsakeTestCase {
    // MARK: Helpers

    private func read(_ argument: String, dest: Bool = false, files: Set<String> = []) -> (BackupReference, Bool) {
        let result = BackupReference.interpret(argument, explicitDestination: dest, isFile: files.contains)
        return (result.reference, result.shadowedFile)
    }

    // MARK: Tests

    func testBackupWordsMeanTheBackupEvenWhenAFileHasTheirName() {
        for word in ["latest", "2", "20261129T02", "20261129T023000Z-", "20261129T023000Z-3f9a1c2e"] {
            XCTAssertTrue(BackupReference.isBackupWord(word), word)
            XCTAssertEqual(read(word, files: [word]).0, .backup(word), word)
            XCTAssertTrue(read(word, files: [word]).1, "\(word): the file is named in a hint")
            XCTAssertFalse(read(word).1, "\(word): no file, no hint")
        }
        for word in ["", "latest2", "x2026", "20261129T023000Z-3f9a1c2e0", "20261129t02", "20261129T023000Z-3F"] {
            XCTAssertFalse(BackupReference.isBackupWord(word), word)
        }
    }

    func testPathsMeanTheFile() {
        for path in ["./latest", "/mnt/x", "backups/20261129", "x.tar.zst", "X.TAR.GZ", "a.tgz", "plain.tar"] {
            XCTAssertEqual(read(path, dest: true).0, .archiveFile(path), path)
            XCTAssertFalse(read(path, dest: true).1, path)
        }
    }

    func testOtherWordsMeanAnExistingFileUnlessDestIsGiven() {
        XCTAssertEqual(read("monday", files: ["monday"]).0, .archiveFile("monday"))
        XCTAssertEqual(read("monday").0, .backup("monday"), "no such file: looked up (and reported) as a backup")
        XCTAssertEqual(read("monday", dest: true, files: ["monday"]).0, .backup("monday"))
        XCTAssertTrue(read("monday", dest: true, files: ["monday"]).1)
    }

    func testArchivesOnOtherMachinesAreNamedByTheirAddress() {
        XCTAssertEqual(read("s3://backups/hosts/web/web_20261129T023000Z-3f9a1c2e.tar.zst").0,
                       .remoteArchive(folder: .s3(bucket: "backups", prefix: "hosts/web"), name: "web_20261129T023000Z-3f9a1c2e.tar.zst",
                                      text: "s3://backups/hosts/web/web_20261129T023000Z-3f9a1c2e.tar.zst"))
        XCTAssertEqual(read("s3://backups/x.tar.zst").0,
                       .remoteArchive(folder: .s3(bucket: "backups", prefix: ""), name: "x.tar.zst", text: "s3://backups/x.tar.zst"))
        XCTAssertEqual(read("rclone:nas:keepsake/x.tar.zst").0,
                       .remoteArchive(folder: .rclone(remote: "nas", path: "keepsake"), name: "x.tar.zst", text: "rclone:nas:keepsake/x.tar.zst"))
        // A bucket alone names no archive: read as a path (and refused where it is used).
        XCTAssertEqual(read("s3://backups").0, .archiveFile("s3://backups"))
    }
}
