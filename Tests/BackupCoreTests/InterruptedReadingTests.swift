import Foundation
@testable import KeepsakeArchive
@testable import KeepsakeStorage
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// A stop (Ctrl-C, SIGTERM) met while an archive is read is an `Interruption`, whichever
/// reader meets it: never passed off as damage to the archive, which would make a restore or
/// repair say the backup is damaged (exit 4) when it was only stopped (exit 130).
final class InterruptedReadingTests: KeepsakeTestCase {
    // MARK: Helpers

    private var folder = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        folder = try makeTemporaryDirectory("interrupted")
    }

    override func tearDownWithError() throws {
        removeTemporaryDirectory(folder)
        try super.tearDownWithError()
    }

    /// An archive GNU tar wrote of a few files (`-I zstd` when `compressed`): read by libarchive.
    private func foreignArchive(compressed: Bool) throws -> String {
        let tree = folder + "/tree"
        try FileManager.default.createDirectory(atPath: tree, withIntermediateDirectories: true)
        // 16 MiB that do not compress: more than any reader takes in at once.
        var generator = SystemRandomNumberGenerator()
        for index in 0..<16 {
            let bytes = (0..<(1 << 17)).map { _ in generator.next() as UInt64 }
            try bytes.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: tree + "/f\(index)")) }
        }
        let archive = folder + (compressed ? "/a.tar.zst" : "/a.tar")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["tar"] + (compressed ? ["-I", "zstd"] : []) + ["-cf", archive, "-C", tree, "."]
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "tar failed")
        return archive
    }

    /// Reads `archive` whole, with the stop asked for after `entries` entries (0: before the
    /// reader opens it).
    private func readStopped(_ archive: String, after entries: Int = 1) throws {
        let cancellation = CancellationFlag()
        if entries == 0 { cancellation.cancel() }
        let reader = try ArchiveReader(source: try FileByteSource(path: archive), name: "a", cancellation: cancellation)
        var read = 0
        while try reader.nextHeader() != nil {
            read += 1
            if read == entries { cancellation.cancel() }
            try reader.skipContent()
        }
    }

    // MARK: Tests

    func testAStopWhileLibarchiveReadsIsAnInterruption() throws {
        let archive = try foreignArchive(compressed: false)
        XCTAssertThrowsError(try readStopped(archive)) { error in
            XCTAssertTrue(error is Interruption, "a stop passed off as \(type(of: error)): \(error)")
        }
    }

    func testAStopWhileACompressedArchiveIsDecodedIsAnInterruption() throws {
        let archive = try foreignArchive(compressed: true)
        XCTAssertThrowsError(try readStopped(archive)) { error in
            XCTAssertTrue(error is Interruption, "a stop passed off as \(type(of: error)): \(error)")
        }
    }

    func testAStopBeforeTheReaderOpensIsAnInterruption() throws {
        let archive = try foreignArchive(compressed: false)
        XCTAssertThrowsError(try readStopped(archive, after: 0)) { error in
            XCTAssertTrue(error is Interruption, "a stop passed off as \(type(of: error)): \(error)")
        }
    }
}
