import Foundation
@testable import KeepsakeS3
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// Where S3 settings and credentials come from, what S3's XML answers say, and that no
/// secret ever reaches a message.
final class S3ConfigurationTests: KeepsakeTestCase {
    // MARK: Setup

    private var home = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        home = try makeTemporaryDirectory("s3config")
    }

    override func tearDownWithError() throws {
        removeTemporaryDirectory(home)
        try super.tearDownWithError()
    }

    private func resolve(_ environment: [String: String], _ overrides: S3Configuration.Overrides = .init()) throws -> S3Configuration {
        try S3Configuration.resolve(environment: environment, overrides: overrides, home: home)
    }

    // MARK: Credentials

    /// `~/.aws` is the environment's HOME, as the AWS tools read it, not the account's.
    func testTheSharedFilesAreFoundUnderHOME() throws {
        try writeFile(home + "/.aws/credentials", "[default]\naws_access_key_id = AKIDHOME\naws_secret_access_key = s\n")
        try writeFile(home + "/.aws/config", "[default]\nregion = eu-north-1\n")
        let resolved = try S3Configuration.resolve(environment: ["HOME": home])
        XCTAssertEqual(resolved.credentials.accessKeyID, "AKIDHOME")
        XCTAssertEqual(resolved.credentialSource, home + "/.aws/credentials [default]")
        XCTAssertEqual(resolved.region, "eu-north-1")
        let elsewhere = try S3Configuration.resolve(environment: ["HOME": home, "AWS_SHARED_CREDENTIALS_FILE": home + "/none",
                                                                  "AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "e"])
        XCTAssertEqual(elsewhere.credentials.accessKeyID, "AKIDENV")
    }

    func testCredentialsFromTheEnvironmentThenTheSharedFile() throws {
        try writeFile(home + "/.aws/credentials", """
            # a comment
            [default]
            aws_access_key_id = AKIDFILE
            aws_secret_access_key = secret-from-file

            [backup]
            aws_access_key_id=AKIDBACKUP
            aws_secret_access_key=secret-backup
            aws_session_token = token-backup
            """)
        let fromEnvironment = try resolve(["AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "secret-env",
                                           "AWS_SESSION_TOKEN": "token-env"])
        XCTAssertEqual(fromEnvironment.credentials.accessKeyID, "AKIDENV")
        XCTAssertEqual(fromEnvironment.credentials.sessionToken, "token-env")
        XCTAssertEqual(fromEnvironment.credentialSource, "AWS_ACCESS_KEY_ID")

        let fromFile = try resolve([:])
        XCTAssertEqual(fromFile.credentials.accessKeyID, "AKIDFILE")
        XCTAssertEqual(fromFile.credentials.secretAccessKey, "secret-from-file")
        XCTAssertEqual(fromFile.credentialSource, home + "/.aws/credentials [default]")

        let named = try resolve(["AWS_PROFILE": "backup"])
        XCTAssertEqual(named.credentials.accessKeyID, "AKIDBACKUP")
        XCTAssertEqual(named.credentials.sessionToken, "token-backup")

        let fromProfile = try resolve(["AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "secret-env"],
                                      .init(accessKeyID: "AKIDPROFILE", secretAccessKey: "secret-profile"))
        XCTAssertEqual(fromProfile.credentials.accessKeyID, "AKIDPROFILE", "a profile's keys come first")
        XCTAssertEqual(try resolve([:], .init(awsProfile: "backup")).credentials.accessKeyID, "AKIDBACKUP")

        let elsewhere = home + "/other-credentials"
        try writeFile(elsewhere, "[default]\naws_access_key_id = AKIDOTHER\naws_secret_access_key = s\n")
        XCTAssertEqual(try resolve(["AWS_SHARED_CREDENTIALS_FILE": elsewhere]).credentials.accessKeyID, "AKIDOTHER")
    }

    func testNoCredentialsSaysWhereItLooked() {
        XCTAssertThrowsError(try resolve(["AWS_PROFILE": "nightly"])) { error in
            let message = "\(error)"
            XCTAssertTrue(message.contains("AWS_ACCESS_KEY_ID") && message.contains("[nightly]")
                          && message.contains(home + "/.aws/credentials"), message)
        }
    }

    func testNoSecretInAnyDescription() throws {
        let configuration = try resolve(["AWS_ACCESS_KEY_ID": "AKIDSHOWN", "AWS_SECRET_ACCESS_KEY": "very-secret-value",
                                         "AWS_SESSION_TOKEN": "very-secret-token"])
        for text in ["\(configuration)", String(reflecting: configuration), "\(configuration.credentials)"] {
            XCTAssertFalse(text.contains("very-secret"), text)
            XCTAssertTrue(text.contains("AKIDSHOWN"), text)
        }
    }

    // MARK: Endpoint and region

    func testEndpointRegionAndAddressing() throws {
        let keys = ["AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S"]
        let aws = try resolve(keys)
        XCTAssertEqual(aws.endpoint, "https://s3.us-east-1.amazonaws.com")
        XCTAssertFalse(aws.pathStyle, "AWS itself: the bucket in the host name")
        XCTAssertEqual(try resolve(keys.merging(["AWS_REGION": "eu-west-3"]) { $1 }).endpoint, "https://s3.eu-west-3.amazonaws.com")

        let local = try resolve(keys.merging(["KEEPSAKE_S3_ENDPOINT": "http://127.0.0.1:8333/"]) { $1 })
        XCTAssertEqual(local.endpoint, "http://127.0.0.1:8333")
        XCTAssertTrue(local.pathStyle, "another server: the bucket in the path")
        XCTAssertEqual(local.region, "us-east-1")
        let option = try resolve(keys.merging(["KEEPSAKE_S3_ENDPOINT": "http://ignored:1"]) { $1 }, .init(endpoint: "https://minio.lan:9000"))
        XCTAssertEqual(option.endpoint, "https://minio.lan:9000", "--s3-endpoint wins over the environment")

        try writeFile(home + "/.aws/config", "[profile backup]\nregion = ap-south-1\n[default]\nregion = sa-east-1\n")
        XCTAssertEqual(try resolve(keys).region, "sa-east-1")
        XCTAssertEqual(try resolve(keys.merging(["AWS_PROFILE": "backup"]) { $1 }).region, "ap-south-1")
        XCTAssertEqual(try resolve(keys, .init(region: "us-west-2")).region, "us-west-2")

        for bad in ["127.0.0.1:8333", "ftp://host", "http://host/path", "http://", "http://a b", "http://h:0", "http://h:65536",
                    "http://h:8x", "http://user@h", "http://h?x", "http://[::1", "http://[zz]:1", "http://h:"] {
            XCTAssertThrowsError(try resolve(keys.merging(["KEEPSAKE_S3_ENDPOINT": bad]) { $1 }), bad) { error in
                XCTAssertEqual(error as? S3Error, .badEndpoint(bad))
            }
            XCTAssertNotNil(S3Configuration.endpointProblem(bad), bad)
        }
        // A wrong address is said before missing credentials.
        XCTAssertThrowsError(try resolve(["KEEPSAKE_S3_ENDPOINT": "ftp://h"])) { XCTAssertEqual($0 as? S3Error, .badEndpoint("ftp://h")) }
        for good in ["http://127.0.0.1:8333", "https://s3.example.com/", "http://[::1]:8333", "http://minio_1.lan:9000", "HTTPS://h"] {
            XCTAssertNil(S3Configuration.endpointProblem(good), good)
        }
    }

    // MARK: Answers

    func testXMLOfListingsUploadsAndErrors() {
        let listing = S3XML("""
            <?xml version="1.0" encoding="UTF-8"?>
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>
            <Contents><Key>p/a&amp;b.tar.zst</Key><Size>12</Size></Contents>
            <Contents><Key>p/caf&#233;&#x21;</Key><Size>3</Size><ETag>&quot;x&quot;</ETag></Contents>
            <!-- a comment <Contents> -->
            <IsTruncated>true</IsTruncated><NextContinuationToken>tok/en==</NextContinuationToken>
            </ListBucketResult>
            """).root
        XCTAssertEqual(listing.name, "ListBucketResult")
        XCTAssertEqual(listing.children("Contents").compactMap { $0.text(of: "Key") }, ["p/a&b.tar.zst", "p/café!"])
        XCTAssertEqual(listing.children("Contents").compactMap { $0.text(of: "Size") }, ["12", "3"])
        XCTAssertEqual(listing.child("Contents")?.children.count, 2)
        XCTAssertEqual(listing.text(of: "NextContinuationToken"), "tok/en==")
        let error = S3XML("<Error><Code>NoSuchKey</Code><Message>The key <![CDATA[<x>]]> is gone</Message></Error>").root
        XCTAssertEqual(error.text(of: "Code"), "NoSuchKey")
        XCTAssertEqual(error.text(of: "Message"), "The key <x> is gone")
        for garbage in ["", "<", "<<<>>>", "<a><b></a>", "</x>", "<a>&#99999999999;&bogus;</a>", String(repeating: "<a>", count: 10_000)] {
            _ = S3XML(garbage).root // never crashes
        }
        XCTAssertEqual(S3XML("<a>&#99999999999;&bogus;</a>").root.text, "&#99999999999;&bogus;")
        // Found by the s3xml fuzz target: a tag without a name opened a nameless element.
        let nameless = S3XML("<Error><Code>X</Code><M\" a=\"b\"?>\n<Errkr><></Error>").root
        XCTAssertEqual(nameless.name, "Error")
        func names(_ element: S3XML.Element) -> [String] { [element.name] + element.children.flatMap(names) }
        XCTAssertFalse(names(nameless).contains(""), "\(names(nameless))")
    }

    func testHTTPDates() {
        XCTAssertEqual(Timestamp.parseHTTPDate("Tue, 01 Dec 2026 19:40:05 GMT"), Timestamp.parseISO8601("2026-12-01T19:40:05Z"))
        for bad in ["", "Tue, 01 Foo 2026 19:40:05 GMT", "Tue, 01 Dec 2026 19:40 GMT", "2026-12-01T19:40:05Z", "Tue, 01 Dec 2026 25:00:00 GMT"] {
            XCTAssertNil(Timestamp.parseHTTPDate(bad), bad)
        }
    }

    /// The unfinished uploads a run aborts are Keepsake's own only: a backup's archive or
    /// manifest, or a supplement's (a prune killed while uploading one leaves its parts).
    func testOnlyKeepsakesOwnUnfinishedUploadsAreAborted() {
        let stem = "box_20270111T030000Z-0000000c"
        for name in [stem + ".tar.zst", stem + ".manifest.jsonl.zst.age", stem + ".supplement.tar.zst",
                     stem + ".supplement.tar.zst.age", stem + ".supplement.jsonl.zst.age"] {
            XCTAssertTrue(S3Backend.isKeepsakeUpload(name), name)
        }
        for name in ["photos.tar.zst", stem + ".summary.json", stem + ".supplement.summary.json", "box_notanid.supplement.tar.zst"] {
            XCTAssertFalse(S3Backend.isKeepsakeUpload(name), name)
        }
    }
}
