@testable import BackupCore
@testable import KeepsakeStorage
import XCTest

/// What `--dest` may say, and that nothing URL-like is ever taken for a local folder.
final class DestinationAddressTests: KeepsakeTestCase {
    // MARK: Helpers

    private func parse(_ text: String) throws -> DestinationAddress {
        try DestinationAddress.parse(text, workingDirectory: "/work", home: "/home/ana")
    }

    private func refusal(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> DestinationAddressError? {
        do {
            let address = try parse(text)
            XCTFail("'\(text)' was taken as \(address)", file: file, line: line)
            return nil
        } catch let error as DestinationAddressError {
            return error
        } catch {
            XCTFail("'\(text)': \(error)", file: file, line: line)
            return nil
        }
    }

    // MARK: Local folders

    func testFoldersAbsoluteRelativeAndHome() throws {
        XCTAssertEqual(try parse("/srv/backups"), .localFolder(path: "/srv/backups"))
        XCTAssertEqual(try parse("backups"), .localFolder(path: "/work/backups"))
        XCTAssertEqual(try parse("./s3:odd"), .localFolder(path: "/work/./s3:odd"))
        XCTAssertEqual(try parse("~/backups"), .localFolder(path: "/home/ana/backups"))
        XCTAssertEqual(try parse("~"), .localFolder(path: "/home/ana"))
        XCTAssertEqual(try parse("2026:12"), .localFolder(path: "/work/2026:12"), "no scheme starts with a digit")
        XCTAssertEqual(try parse("file:///mnt/usb/backups/"), .localFolder(path: "/mnt/usb/backups"))
        XCTAssertEqual(try parse("file:///mnt/my%20disk"), .localFolder(path: "/mnt/my disk"))
        XCTAssertFalse(try parse("/srv").isRemote)
    }

    // MARK: Remote forms

    func testS3BucketsAndPrefixes() throws {
        XCTAssertEqual(try parse("s3://backups"), .s3(bucket: "backups", prefix: ""))
        XCTAssertEqual(try parse("s3://backups/"), .s3(bucket: "backups", prefix: ""))
        XCTAssertEqual(try parse("s3://backups/hosts/web-1/"), .s3(bucket: "backups", prefix: "hosts/web-1"))
        XCTAssertEqual(try parse("S3://my.bucket-2/p"), .s3(bucket: "my.bucket-2", prefix: "p"))
        XCTAssertEqual(try parse("s3://backups/hosts/web-1").description, "s3://backups/hosts/web-1")
        XCTAssertTrue(try parse("s3://backups").isRemote)
        for bad in ["s3://", "s3://ab", "s3://Upper", "s3://-dash", "s3://a..b", "s3://bucket//x", "s3://bucket/a/../b",
                    "s3://bucket_underscore"] {
            XCTAssertNotNil(refusal(bad), bad)
        }
    }

    func testRcloneRemotes() throws {
        XCTAssertEqual(try parse("rclone:nas:backups/keepsake"), .rclone(remote: "nas", path: "backups/keepsake"))
        XCTAssertEqual(try parse("rclone:my-remote:"), .rclone(remote: "my-remote", path: ""))
        XCTAssertEqual(try parse("rclone:b2:bucket/dir/"), .rclone(remote: "b2", path: "bucket/dir"))
        XCTAssertEqual(try parse("rclone:nas:/abs/path").description, "rclone:nas:/abs/path")
        for bad in ["rclone:", "rclone:nocolon", "rclone::path", "rclone:-flag:x", "rclone:a/b:x"] {
            XCTAssertNotNil(refusal(bad), bad)
        }
    }

    // MARK: Refusals

    /// `--dest s3://b/p` once made a local folder named `s3:`: every URL-like text is either
    /// a known form or an error that lists the forms.
    func testUnknownSchemesAndTyposAreRefusedWithTheForms() {
        for text in ["s3:/bucket/prefix", "s3:bucket", "sftp://host/path", "gs://bucket", "https://example.com/x", "nas:backups",
                     "C:backups", "file://relative"] {
            guard let error = refusal(text) else { continue }
            let message = error.description
            XCTAssertTrue(message.contains("'\(text)'"), "names what was given: \(message)")
            XCTAssertTrue(message.contains("s3://BUCKET/PREFIX") && message.contains("rclone:REMOTE:PATH"),
                          "lists the forms: \(message)")
        }
        XCTAssertEqual(refusal("s3:/bucket/prefix")?.suggestion, "s3://bucket/prefix")
        XCTAssertTrue(refusal("sftp://host/path")?.description.contains("rclone") == true, "points at rclone for sftp")
        XCTAssertTrue(refusal("nas:backups")?.description.contains("./nas:backups") == true,
                      "a folder with a colon is reachable as ./NAME")
        XCTAssertNotNil(refusal(""))
    }
}
