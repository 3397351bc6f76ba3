import CPosix
import Foundation
@testable import KeepsakeArchive
@testable import KeepsakeModel
@testable import KeepsakeStorage
@testable import KeepsakeScan
import KeepsakeEncryption
import KeepsakeSupport
import XCTest

@testable import BackupCore

final class EngineTests: KeepsakeTestCase {
    // MARK: Setup

    private var root = ""
    private var source = ""
    private var destination = ""
    private var storage: LocalFolderBackend!
    private var recorder: EventRecorder!

    /// A name that is not UTF-8.
    private let oddName: [UInt8] = Array("odd-".utf8) + [0xff, 0xfe]
    private let sparseSize = 1 << 20
    private let sparseDataOffset = 512 * 1024

    override func setUpWithError() throws {
        try super.setUpWithError()
        root = try makeTemporaryDirectory("engine")
        source = root + "/src"
        destination = root + "/dest"
        storage = LocalFolderBackend(path: destination)
        recorder = EventRecorder()
        try makeSourceTree()
    }

    override func tearDownWithError() throws {
        storage = nil
        recorder = nil
        removeTemporaryDirectory(root)
        try super.tearDownWithError()
    }

    /// src/a.txt (0640, fixed mtime, an xattr), src/hard (hard link to a.txt), src/link → a.txt,
    /// src/sub/b.bin, src/sub/empty, src/sub/deep/c.txt, src/odd-\xff\xfe, src/sparse.
    private func makeSourceTree() throws {
        try writeFile(source + "/a.txt", "alpha\n")
        chmod(source + "/a.txt", 0o640)
        var times = [timespec(tv_sec: 1_600_000_000, tv_nsec: 123_456_789), timespec(tv_sec: 1_600_000_000, tv_nsec: 123_456_789)]
        utimensat(AT_FDCWD, source + "/a.txt", &times, 0)
        let fd = open(source + "/a.txt", O_RDONLY)
        let value = Array("kept".utf8)
        _ = value.withUnsafeBytes { ks_fsetxattr(fd, "user.keepsake-test", $0.baseAddress, $0.count, 0) }
        close(fd)
        link(source + "/a.txt", source + "/hard")
        symlink("a.txt", source + "/link")
        try writeFile(source + "/sub/b.bin", bytes: (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) })
        try writeFile(source + "/sub/empty", "")
        try writeFile(source + "/sub/deep/c.txt", "gamma\n")
        try createFile(named: oddName, in: source, contents: Array("odd\n".utf8))
        let sparse = open(source + "/sparse", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        ftruncate(sparse, off_t(sparseSize))
        let data = [UInt8](repeating: 0x5a, count: 4096)
        _ = data.withUnsafeBytes { pwrite(sparse, $0.baseAddress, $0.count, off_t(sparseDataOffset)) }
        close(sparse)
    }

    private func request(compression: Compression = .zstd, dryRun: Bool = false, now: Date = fixedDate()) throws -> BackupRequest {
        BackupRequest(sources: [source], compression: compression, scan: try noExcludes(), dryRun: dryRun,
                      toolVersion: "test", now: now)
    }

    private func backup(compression: Compression = .zstd, now: Date = fixedDate()) throws -> BackupResult {
        let engine = BackupEngine(storage: storage, events: recorder, cancellation: CancellationFlag())
        return try engine.run(try request(compression: compression, now: now))
    }

    private func restore(_ reference: String = "latest", into target: String, selections: [String] = [],
                         sidecar: Bool = true, dryRun: Bool = false) throws -> RestoreResult {
        let catalog = BackupCatalog(storage: storage)
        let manifest = try catalog.manifest(of: try catalog.resolve(reference))
        let name = try XCTUnwrap(manifest.summary.archive?.name)
        let archive = try storage.open(name)
        defer { archive.close() }
        return try Restorer(events: recorder, cancellation: CancellationFlag())
            .restore(archive: archive, archiveName: name, manifest: sidecar ? manifest : nil,
                     request: RestoreRequest(target: target, selections: selections, dryRun: dryRun))
    }

    /// Where a source path lands under a restore target.
    private func restored(_ target: String, _ sourcePath: String) -> String {
        target + "/" + String(decoding: archivePath(sourcePath), as: UTF8.self)
    }

    private func assertSameFile(_ original: String, _ copy: String, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try readFileBytes(PathBytes.from(copy)), try readFileBytes(PathBytes.from(original)), copy,
                       file: file, line: line)
    }

    // MARK: Backup and verify

    func testBackupThenVerifyIsIntact() throws {
        let result = try backup()
        XCTAssertFalse(result.dryRun)
        XCTAssertEqual(result.warnings, [])
        XCTAssertEqual(recorder.warnings, [])
        let summary = result.summary
        XCTAssertEqual(summary.fileCount, 6, "a.txt, b.bin, empty, c.txt, odd, sparse")
        XCTAssertEqual(summary.directoryCount, 3)
        XCTAssertEqual(summary.symlinkCount, 1)
        XCTAssertEqual(summary.hardlinkCount, 1)
        XCTAssertEqual(summary.originalBytes, Int64(6 + 70_000 + 0 + 6 + 4 + sparseSize))
        XCTAssertEqual(summary.sources, [source])
        XCTAssertEqual(summary.created, fixedDate())
        XCTAssertEqual(summary.level, 3)
        let facts = try XCTUnwrap(summary.archive)
        XCTAssertEqual(facts.name, result.archiveName)
        XCTAssertEqual(try storage.list().first { $0.name == facts.name }?.size, facts.size)

        let item = try BackupCatalog(storage: storage).resolve("latest")
        XCTAssertEqual(item.summary, summary)
        let report = try Verifier(events: nil, cancellation: CancellationFlag()).verify(item, in: storage)
        XCTAssertTrue(report.isIntact, "\(report.problems) \(report.archiveProblems)")
        XCTAssertEqual(report.filesChecked, 6, "the files (not the metadata entries)")
        XCTAssertEqual(report.name, facts.name)
    }

    func testEveryCompressionBacksUpAndVerifies() throws {
        for (index, codec) in Compression.allCases.enumerated() {
            let result = try backup(compression: codec, now: fixedDate(days: Double(index)))
            XCTAssertEqual(result.summary.compression, codec)
            XCTAssertTrue(try XCTUnwrap(result.archiveName).hasSuffix(codec.fileExtension))
            let item = try BackupCatalog(storage: storage).resolve(result.summary.id.rawValue)
            let report = try Verifier(events: nil, cancellation: CancellationFlag()).verify(item, in: storage)
            XCTAssertTrue(report.isIntact, "\(codec): \(report.problems) \(report.archiveProblems)")
        }
    }

    func testArchiveHoldsTheManifestLastAndIsAValidLoneArchive() throws {
        let result = try backup()
        let name = try XCTUnwrap(result.archiveName)
        let source = try storage.open(name)
        defer { source.close() }
        let reader = try ArchiveReader(source: source, name: name)
        var paths: [[UInt8]] = []
        var lastContent: [UInt8] = []
        while let header = try reader.nextHeader() {
            paths.append(header.path)
            lastContent = header.path == ArchiveLayout.manifestEntryPath ? try reader.readContent(limit: 1 << 24) : []
            if header.path != ArchiveLayout.manifestEntryPath { try reader.skipContent() }
        }
        XCTAssertEqual(paths.last, ArchiveLayout.manifestEntryPath)
        XCTAssertEqual(paths.dropLast().last, ArchiveLayout.checksumsEntryPath)
        let stored = try storage.readObject(name)
        XCTAssertEqual(Array(stored.prefix(4)), [0x28, 0xB5, 0x2F, 0xFD], "a zstd frame comes first")
        XCTAssertEqual(Array(stored.suffix(4)), [0xB1, 0xEA, 0x92, 0x8F], "the seek table comes last")
        let inner = try Manifest.parse(lastContent)
        let sidecar = try BackupCatalog(storage: storage).manifest(of: try BackupCatalog(storage: storage).resolve("latest"))
        XCTAssertEqual(inner.entries, sidecar.entries)
        XCTAssertNil(inner.summary.archive, "the archive cannot know its own hash")

        let lone = try storage.open(name)
        defer { lone.close() }
        let report = try Verifier(events: nil, cancellation: CancellationFlag()).verify(archive: lone, name: name, sidecar: nil)
        XCTAssertTrue(report.isIntact, "\(report.problems) \(report.archiveProblems)")
        XCTAssertEqual(report.id, result.summary.id)
    }

    func testVerifyNoticesADamagedArchive() throws {
        let result = try backup(compression: Compression.none)
        let path = destination + "/" + (try XCTUnwrap(result.archiveName))
        var bytes = try readFileBytes(PathBytes.from(path))
        // Flip a byte of a.txt's content ("alpha") in the uncompressed tar.
        let alpha = Array("alpha\n".utf8)
        let index = try XCTUnwrap((0..<(bytes.count - alpha.count)).first { Array(bytes[$0..<($0 + alpha.count)]) == alpha })
        bytes[index] = UInt8(ascii: "A")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let item = try BackupCatalog(storage: storage).resolve("latest")
        let report = try Verifier(events: nil, cancellation: CancellationFlag()).verify(item, in: storage)
        XCTAssertFalse(report.isIntact)
        XCTAssertTrue(report.problems.contains { $0.path.hasSuffix("src/a.txt") }, "\(report.problems)")
        XCTAssertFalse(report.archiveProblems.isEmpty, "the archive's own SHA-256 no longer matches")
    }

    func testVerifyNotesDamageOnlyInTheDestinationItIsGivenAndTakesTheNoteBack() throws {
        let result = try backup(compression: Compression.none)
        let path = destination + "/" + (try XCTUnwrap(result.archiveName))
        let original = try readFileBytes(PathBytes.from(path))
        var damaged = original
        damaged[damaged.count / 2] ^= 0xFF
        try Data(damaged).write(to: URL(fileURLWithPath: path))
        let item = try BackupCatalog(storage: storage).resolve("latest")
        let record = try XCTUnwrap(DamageRecord.name(forManifest: item.manifestName))
        let names = { Set(try self.storage.list().map(\.name)) }

        // Read only: a verifier given no destination to write notes nothing.
        let reading = Verifier(events: nil, cancellation: CancellationFlag())
        XCTAssertFalse(try reading.verify(item, in: KeyedStorage(storage, keyring: .empty)).isIntact)
        XCTAssertFalse(try names().contains(record), "nothing written by a verifier that only reads")

        let noting = Verifier(events: nil, cancellation: CancellationFlag())
        noting.damageRecords = storage
        XCTAssertFalse(try noting.verify(item, in: KeyedStorage(storage, keyring: .empty)).isIntact)
        XCTAssertTrue(try names().contains(record), "the damage is noted beside the backup")
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination + "/keepsake.lock"), "and the lock released")

        // Put back whole (a repaired copy): the next verify takes the note back.
        try Data(original).write(to: URL(fileURLWithPath: path))
        let again = Verifier(events: nil, cancellation: CancellationFlag())
        again.damageRecords = storage
        XCTAssertTrue(try again.verify(item, in: KeyedStorage(storage, keyring: .empty)).isIntact)
        XCTAssertFalse(try names().contains(record))
    }

    func testSecondBackupTakesOverAStaleLockAndReportsIt() throws {
        try storage.prepare()
        let stale = LockOwner(pid: StorageConformanceSuite.deadPID, host: HostIdentity.hostName,
                              started: Date(timeIntervalSince1970: 1_700_000_000), operation: "backup", processStartTicks: nil)
        try writeFile(destination + "/keepsake.lock", stale.json.serialized())
        try writeFile(destination + "/.tmp-leftover", "junk")
        _ = try backup()
        XCTAssertTrue(recorder.messages.contains { $0.contains("stale lock") && $0.contains("pid \(stale.pid)") }, "\(recorder.messages)")
        XCTAssertTrue(recorder.messages.contains { $0.contains("leftover") }, "\(recorder.messages)")
        XCTAssertFalse(rawDirectoryNames(destination).contains { $0.hasPrefix(".") || $0 == "keepsake.lock" },
                       "\(rawDirectoryNames(destination))")
    }

    // MARK: Restore

    func testRestoreReproducesTheFiles() throws {
        _ = try backup()
        let target = root + "/restore"
        let result = try restore(into: target)
        XCTAssertFalse(result.hasIntegrityFailure, "\(result.damaged) \(String(describing: result.archiveProblem))")
        XCTAssertEqual(result.warnings, [])
        XCTAssertTrue(result.verifiedAgainstManifest)
        XCTAssertEqual(result.files, 6)
        XCTAssertEqual(result.hardlinks, 1)
        XCTAssertEqual(result.symlinks, 1)
        XCTAssertEqual(result.directories, 3)

        for relative in ["a.txt", "hard", "sub/b.bin", "sub/empty", "sub/deep/c.txt", "sparse"] {
            try assertSameFile(source + "/" + relative, restored(target, source + "/" + relative))
        }
        let oddCopy = PathBytes.join(PathBytes.from(restored(target, source)), oddName)
        XCTAssertEqual(try readFileBytes(oddCopy), Array("odd\n".utf8))

        // Symlink kept as a symlink, hard link as a link to the same inode.
        let linkPath = restored(target, source + "/link")
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: linkPath), "a.txt")
        let a = try XCTUnwrap(lstatInfo(restored(target, source + "/a.txt")))
        let hard = try XCTUnwrap(lstatInfo(restored(target, source + "/hard")))
        XCTAssertEqual(a.st_ino, hard.st_ino)
        XCTAssertEqual(a.st_nlink, 2)

        // Metadata: permissions, nanosecond mtime, xattr.
        XCTAssertEqual(a.st_mode & 0o7777, 0o640)
        XCTAssertEqual(a.st_mtim.tv_sec, 1_600_000_000)
        XCTAssertEqual(a.st_mtim.tv_nsec, 123_456_789)
        var value = [UInt8](repeating: 0, count: 64)
        let length = value.withUnsafeMutableBytes {
            ks_lgetxattr(restored(target, source + "/a.txt"), "user.keepsake-test", $0.baseAddress, $0.count)
        }
        XCTAssertEqual(length, 4)
        XCTAssertEqual(Array(value.prefix(max(0, length))), Array("kept".utf8))

        // The sparse file keeps its holes.
        let sparse = try XCTUnwrap(lstatInfo(restored(target, source + "/sparse")))
        XCTAssertEqual(Int(sparse.st_size), sparseSize)
        XCTAssertLessThan(Int(sparse.st_blocks) * 512, sparseSize / 2)

        // No temporary names left behind.
        let leftovers = FileManager.default.enumerator(atPath: target)?.compactMap { $0 as? String }
            .filter { ($0 as NSString).lastPathComponent.hasPrefix(".keepsake-") } ?? []
        XCTAssertEqual(leftovers, [])
    }

    func testRestoreFromALoneArchiveUsesItsOwnManifest() throws {
        _ = try backup(compression: .gzip)
        let target = root + "/lone"
        let result = try restore(into: target, sidecar: false)
        XCTAssertFalse(result.hasIntegrityFailure, "\(result.damaged) \(String(describing: result.archiveProblem))")
        XCTAssertTrue(result.verifiedAgainstManifest)
        XCTAssertFalse(result.plainTarball)
        XCTAssertEqual(result.unverifiedFiles, 0)
        XCTAssertEqual(result.files, 6)
        XCTAssertEqual(result.hardlinks, 1)
        try assertSameFile(source + "/sub/b.bin", restored(target, source + "/sub/b.bin"))
        try assertSameFile(source + "/a.txt", restored(target, source + "/hard"))
    }

    func testRestoreWithSelections() throws {
        _ = try backup()
        let target = root + "/partial"
        let result = try restore(into: target, selections: [source + "/sub"])
        XCTAssertFalse(result.hasIntegrityFailure, "\(result.damaged)")
        XCTAssertEqual(result.files, 3)
        try assertSameFile(source + "/sub/b.bin", restored(target, source + "/sub/b.bin"))
        try assertSameFile(source + "/sub/deep/c.txt", restored(target, source + "/sub/deep/c.txt"))
        XCTAssertNil(lstatInfo(restored(target, source + "/a.txt")))
        XCTAssertNil(lstatInfo(restored(target, source + "/link")))
        XCTAssertNil(lstatInfo(restored(target, source + "/sparse")))

        let globbed = root + "/globbed"
        let byPattern = try restore(into: globbed, selections: ["*.txt"])
        XCTAssertFalse(byPattern.hasIntegrityFailure, "\(byPattern.damaged)")
        XCTAssertEqual(byPattern.files, 2)
        try assertSameFile(source + "/a.txt", restored(globbed, source + "/a.txt"))
        try assertSameFile(source + "/sub/deep/c.txt", restored(globbed, source + "/sub/deep/c.txt"))
        XCTAssertNil(lstatInfo(restored(globbed, source + "/sub/b.bin")))
    }

    func testRestoreKeepsExistingFilesByDefault() throws {
        _ = try backup()
        let target = root + "/existing"
        try writeFile(restored(target, source + "/a.txt"), "mine")
        let result = try restore(into: target)
        XCTAssertEqual(result.skippedExisting, 1)
        XCTAssertEqual(try String(contentsOfFile: restored(target, source + "/a.txt"), encoding: .utf8), "mine")
    }

    func testRestoreDryRunWritesNothing() throws {
        _ = try backup()
        let target = root + "/never"
        let result = try restore(into: target, dryRun: true)
        XCTAssertNil(lstatInfo(target), "a dry run does not even create the target")
        XCTAssertEqual(result.files, 6)
        XCTAssertTrue(result.planned.contains(String(source.dropFirst()) + "/sub/b.bin"), "\(result.planned)")
        XCTAssertFalse(result.hasIntegrityFailure)
    }

    // MARK: Dry run and cancellation

    func testBackupDryRunStoresNothing() throws {
        let engine = BackupEngine(storage: storage, events: recorder, cancellation: CancellationFlag())
        let result = try engine.run(try request(dryRun: true))
        XCTAssertTrue(result.dryRun)
        XCTAssertNil(result.archiveName)
        XCTAssertNil(result.manifestName)
        XCTAssertNil(result.summary.archive)
        XCTAssertEqual(result.summary.fileCount, 6)
        XCTAssertEqual(result.summary.hardlinkCount, 1)
        XCTAssertEqual(result.summary.directoryCount, 3)
        XCTAssertEqual(result.summary.originalBytes, Int64(6 + 70_000 + 0 + 6 + 4 + sparseSize))
        XCTAssertEqual(try storage.list(), [])
        XCTAssertEqual(rawDirectoryNames(destination), [])
    }

    func testCancelledBackupLeavesNothing() throws {
        let flag = CancellationFlag()
        flag.cancel()
        let engine = BackupEngine(storage: storage, events: recorder, cancellation: flag)
        XCTAssertThrowsError(try engine.run(try request())) { error in
            XCTAssertEqual(error as? Interruption, Interruption())
        }
        XCTAssertEqual(try storage.list(), [])
        XCTAssertEqual(rawDirectoryNames(destination), [], "no temporary file and no lock left")
        // The destination is usable again afterwards.
        XCTAssertNoThrow(try backup())
    }

    func testCancelledRestoreThrowsInterrupted() throws {
        _ = try backup()
        let catalog = BackupCatalog(storage: storage)
        let manifest = try catalog.manifest(of: try catalog.resolve("latest"))
        let name = try XCTUnwrap(manifest.summary.archive?.name)
        let archive = try storage.open(name)
        defer { archive.close() }
        let flag = CancellationFlag()
        flag.cancel()
        let target = root + "/cancelled"
        XCTAssertThrowsError(try Restorer(events: nil, cancellation: flag)
            .restore(archive: archive, archiveName: name, manifest: nil, request: RestoreRequest(target: target))) { error in
            XCTAssertEqual(error as? Interruption, Interruption())
        }
        XCTAssertEqual(rawDirectoryNames(target), [])
    }

    func testMissingSourceIsRefusedBeforeAnythingIsStored() throws {
        let engine = BackupEngine(storage: storage, events: nil, cancellation: CancellationFlag())
        let request = BackupRequest(sources: [root + "/does-not-exist"], scan: try noExcludes(), toolVersion: "test")
        XCTAssertThrowsError(try engine.run(request)) { error in
            guard case .sourceUnusable? = error as? ScanError else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try engine.run(BackupRequest(sources: [], scan: try noExcludes(), toolVersion: "test"))) { error in
            guard case .invalidRequest? = error as? EngineError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try storage.list(), [])
    }

    // MARK: Archive round trips

    private func sampleHeaders() -> [(header: ArchiveEntryHeader, content: [UInt8])] {
        let fileContent = Array("hello, archive\n".utf8)
        var sparseContent = [UInt8](repeating: 0, count: 300_000)
        for index in 100_000..<100_100 { sparseContent[index] = 0x41 }
        for index in 299_990..<300_000 { sparseContent[index] = 0x42 }
        return [
            (ArchiveEntryHeader(path: Array("data".utf8), type: .directory, permissions: 0o750, uid: 1000, gid: 1000,
                                userName: "ana", groupName: "staff", mtimeSeconds: 1_700_000_000, mtimeNanoseconds: 5,
                                xattrs: [.init(name: "user.dir", value: Array("d".utf8))]), []),
            (ArchiveEntryHeader(path: Array("data/file.txt".utf8), type: .file, size: Int64(fileContent.count),
                                permissions: 0o4755, uid: 1_000_000, gid: 65_534, userName: "ünï", groupName: "nogroup",
                                mtimeSeconds: 1_234_567_890, mtimeNanoseconds: 987_654_321,
                                xattrs: [.init(name: "user.comment", value: Array("note".utf8)),
                                         .init(name: "user.binary", value: [0, 255, 1, 10])]), fileContent),
            (ArchiveEntryHeader(path: Array("data/link".utf8), type: .symlink, permissions: 0o777, mtimeSeconds: 1,
                                linkTarget: Array("../elsewhere/ünï".utf8)), []),
            (ArchiveEntryHeader(path: Array("data/hard".utf8), type: .hardlink, permissions: 0o4755, uid: 1_000_000,
                                gid: 65_534, mtimeSeconds: 1_234_567_890, linkTarget: Array("data/file.txt".utf8)), []),
            (ArchiveEntryHeader(path: Array("data/sparse".utf8), type: .file, size: Int64(sparseContent.count),
                                permissions: 0o600, mtimeSeconds: 1_700_000_000,
                                sparseRegions: [.init(offset: 100_000, length: 100), .init(offset: 299_990, length: 10)]),
             sparseContent),
            (ArchiveEntryHeader(path: Array("data/fifo".utf8), type: .fifo, permissions: 0o600, mtimeSeconds: 2), []),
            (ArchiveEntryHeader(path: Array("dev/sda1".utf8), type: .blockDevice, permissions: 0o660, mtimeSeconds: 3,
                                rdev: 0x0801), []),
            (ArchiveEntryHeader(path: Array("dev/tty9".utf8), type: .characterDevice, permissions: 0o620, mtimeSeconds: 4,
                                rdev: 0x0409), []),
            (ArchiveEntryHeader(path: Array("data/".utf8) + [0xff, 0xc3, 0x28], type: .file, size: 1, mtimeSeconds: 5), [7]),
            (ArchiveEntryHeader(path: Array(("data/" + String(repeating: "long-name/", count: 30) + "end").utf8), type: .file,
                                size: 0, mtimeSeconds: 6), []),
        ]
    }

    func testArchiveWriterReaderRoundTripForEveryCompression() throws {
        try storage.prepare()
        let samples = sampleHeaders()
        for codec in Compression.allCases {
            let name = "roundtrip" + codec.fileExtension
            let pending = try storage.create(name)
            let writer = try ArchiveWriter(sink: pending, compression: codec, level: nil, threads: 2)
            for sample in samples {
                try writer.writeHeader(sample.header)
                try sample.content.withUnsafeBytes { try writer.writeData($0, path: sample.header.path) }
            }
            try writer.finish()
            try pending.commit()

            let source = try storage.open(name)
            defer { source.close() }
            let reader = try ArchiveReader(source: source, name: name)
            var index = 0
            while let header = try reader.nextHeader() {
                guard index < samples.count else { XCTFail("\(codec): extra entry \(header)"); break }
                var expected = samples[index].header
                // Regions are how the data is stored, not part of the header read back; and only
                // regular files carry a size.
                expected.sparseRegions = []
                if expected.type != .file { expected.size = 0 }
                // Owner names are compared in testMissingOwnerNamesReadBackAsNil.
                var read = header
                if read.userName == "" { read.userName = nil }
                if read.groupName == "" { read.groupName = nil }
                XCTAssertEqual(read, expected, "\(codec) entry \(index)")
                if header.type == .file {
                    var blockBytes = 0
                    var content = [UInt8](repeating: 0, count: Int(header.size))
                    while let block = try reader.nextBlock() {
                        blockBytes += block.bytes.count
                        for (offset, byte) in block.bytes.enumerated() { content[Int(block.offset) + offset] = byte }
                    }
                    XCTAssertEqual(content, samples[index].content, "\(codec) content of entry \(index)")
                    if !samples[index].header.sparseRegions.isEmpty {
                        XCTAssertEqual(blockBytes, 110, "\(codec): only the data regions are stored")
                    }
                } else {
                    try reader.skipContent()
                }
                index += 1
            }
            XCTAssertEqual(index, samples.count, "\(codec)")
            let stored = try storage.readObject(name)
            let magic: [Compression: [UInt8]] = [.zstd: [0x28, 0xB5, 0x2F, 0xFD], .gzip: [0x1F, 0x8B], .xz: [0xFD, 0x37, 0x7A, 0x58, 0x5A],
                                                 .lz4: [0x04, 0x22, 0x4D, 0x18]]
            if let expected = magic[codec] {
                XCTAssertEqual(Array(stored.prefix(expected.count)), expected, "\(codec) magic")
            } else {
                XCTAssertEqual(Array(stored[257..<262]), Array("ustar".utf8), "plain tar")
            }
        }
    }

    /// A header written without owner names must not read back with empty names.
    func testMissingOwnerNamesReadBackAsNil() throws {
        try storage.prepare()
        let pending = try storage.create("names.tar")
        let writer = try ArchiveWriter(sink: pending, compression: Compression.none, level: nil, threads: 1)
        try writer.writeHeader(ArchiveEntryHeader(path: Array("nameless".utf8), type: .directory, uid: 4242, gid: 4242))
        try writer.finish()
        try pending.commit()
        let source = try storage.open("names.tar")
        defer { source.close() }
        let header = try XCTUnwrap(try ArchiveReader(source: source, name: "names.tar").nextHeader())
        XCTAssertEqual(header.uid, 4242)
        XCTAssertNil(header.userName)
        XCTAssertNil(header.groupName)
    }

    func testReadContentFillsSparseHoles() throws {
        try storage.prepare()
        let sample = sampleHeaders()[4]
        let pending = try storage.create("sparse.tar")
        let writer = try ArchiveWriter(sink: pending, compression: Compression.none, level: nil, threads: 1)
        try writer.writeHeader(sample.header)
        try sample.content.withUnsafeBytes { try writer.writeData($0, path: sample.header.path) }
        try writer.finish()
        try pending.commit()
        let source = try storage.open("sparse.tar")
        defer { source.close() }
        let reader = try ArchiveReader(source: source, name: "sparse.tar")
        XCTAssertNotNil(try reader.nextHeader())
        XCTAssertEqual(try reader.readContent(limit: 1 << 20), sample.content)
        XCTAssertNil(try reader.nextHeader())
    }

    func testArchiveReaderOnGarbageThrowsDamaged() throws {
        try storage.prepare()
        var state: UInt32 = 0x1234_5678
        let garbage: [UInt8] = (0..<8192).map { _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        }
        for (name, bytes) in [("garbage.bin", garbage), ("text.tar", Array(String(repeating: "not a tar file\n", count: 100).utf8)),
                              ("zstd-magic.tar.zst", [0x28, 0xb5, 0x2f, 0xfd] + garbage)] {
            let pending = try storage.create(name)
            try bytes.withUnsafeBytes { try pending.write($0) }
            try pending.commit()
            let source = try storage.open(name)
            defer { source.close() }
            do {
                let reader = try ArchiveReader(source: source, name: name)
                while let _ = try reader.nextHeader() { try reader.skipContent() }
                XCTFail("\(name): garbage read as an archive")
            } catch let error as ArchiveError {
                guard case .damaged(let archive, _) = error else { XCTFail("\(name): \(error)"); continue }
                XCTAssertEqual(archive, name)
            } catch {
                XCTFail("\(name): expected ArchiveError.damaged, got \(error)")
            }
        }
    }

    func testWriterRefusesALevelTheCodecDoesNotHave() throws {
        try storage.prepare()
        let pending = try storage.create("bad-level.tar.gz")
        defer { pending.abort() }
        XCTAssertThrowsError(try ArchiveWriter(sink: pending, compression: .gzip, level: 42, threads: 1)) { error in
            guard case .setup? = error as? ArchiveError else { return XCTFail("\(error)") }
        }
    }

    func testTruncatedArchiveThrowsDamaged() throws {
        let result = try backup(compression: .gzip)
        let name = try XCTUnwrap(result.archiveName)
        let bytes = try storage.readObject(name)
        let pending = try storage.create("cut.tar.gz")
        try Array(bytes.prefix(bytes.count / 2)).withUnsafeBytes { try pending.write($0) }
        try pending.commit()
        let source = try storage.open("cut.tar.gz")
        defer { source.close() }
        XCTAssertThrowsError(try {
            let reader = try ArchiveReader(source: source, name: "cut.tar.gz")
            while let header = try reader.nextHeader() {
                if header.type == .file { _ = try reader.readContent(limit: 1 << 24) } else { try reader.skipContent() }
            }
        }()) { error in
            guard case .damaged? = error as? ArchiveError else { return XCTFail("\(error)") }
        }
    }
}
