import Foundation
import XCTest
@testable import BackupCore

// MARK: - The suite

/// Checks any `StorageBackend` against the protocol's promises. A backend's test class
/// builds one with a factory for fresh, empty (not yet prepared) destinations and a few
/// hooks for what only the backend itself can do (plant a lock or a leftover the way a
/// crashed run would, and list what is physically stored, temporaries included). Then it
/// calls each `check…` from its own test methods (or `runAll()`). LocalFolderBackend runs
/// it below; S3 or rclone backends can reuse it unchanged.
struct StorageConformanceSuite {
    // MARK: Configuration

    /// A fresh, empty destination (not yet prepared).
    let makeBackend: () throws -> StorageBackend
    /// Every name physically present, including temporaries and the lock.
    let rawNames: (StorageBackend) throws -> [String]
    /// Places a lock record for `owner` as another run would have left it.
    let plantLock: (StorageBackend, LockOwner) throws -> Void
    /// Places what an interrupted store leaves behind; returns its raw name.
    let plantLeftover: (StorageBackend) throws -> String
    /// Whether a raw name is a temporary object of a store in progress.
    let isTemporaryName: (String) -> Bool
    /// The name of the lock record among the raw names.
    let lockName: String

    /// A pid that no process on this host has (above the kernel's pid limit).
    static var deadPID: Int32 {
        let text = (try? String(contentsOfFile: "/proc/sys/kernel/pid_max", encoding: .utf8)) ?? "4194304"
        let limit = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 4_194_304
        return limit // pids are always below pid_max
    }

    // MARK: Helpers

    private func prepared() throws -> StorageBackend {
        let backend = try makeBackend()
        try backend.prepare()
        return backend
    }

    @discardableResult
    private func store(_ bytes: [UInt8], as name: String, in backend: StorageBackend) throws -> PendingObject {
        let pending = try backend.create(name)
        try bytes.withUnsafeBytes { try pending.write($0) }
        try pending.commit()
        return pending
    }

    private func pattern(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &+ ($0 >> 11)) }
    }

    // MARK: Checks

    func checkPrepareIsIdempotentAndStartsEmpty(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try makeBackend()
        try backend.prepare()
        try backend.prepare()
        XCTAssertEqual(try backend.list(), [], file: file, line: line)
        XCTAssertFalse(backend.location.isEmpty, file: file, line: line)
    }

    func checkCommitMakesObjectVisibleWithItsSize(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        let pending = try backend.create("one.bin")
        let bytes = pattern(3 * 1024 * 1024 + 17) // larger than any sane write buffer
        try bytes.withUnsafeBytes { raw in
            // Several writes of odd sizes.
            var offset = 0
            for size in [1, 4095, 1 << 20, 5, 2 << 20] where offset < raw.count {
                let end = min(raw.count, offset + size)
                try pending.write(UnsafeRawBufferPointer(rebasing: raw[offset..<end]))
                offset = end
            }
            try pending.write(UnsafeRawBufferPointer(rebasing: raw[offset...]))
        }
        XCTAssertEqual(pending.bytesWritten, Int64(bytes.count), file: file, line: line)
        XCTAssertEqual(try backend.list(), [], "nothing is visible before commit", file: file, line: line)
        try pending.commit()
        XCTAssertEqual(try backend.list(), [StoredObject(name: "one.bin", size: Int64(bytes.count))], file: file, line: line)
        XCTAssertEqual(try backend.readObject("one.bin"), bytes, file: file, line: line)
        let raw = try rawNames(backend)
        XCTAssertFalse(raw.contains(where: isTemporaryName), "\(raw)", file: file, line: line)
        // Committing again or aborting after the commit changes nothing.
        try pending.commit()
        pending.abort()
        XCTAssertEqual(try backend.list().map(\.name), ["one.bin"], file: file, line: line)
    }

    func checkEmptyObject(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        try store([], as: "empty", in: backend)
        XCTAssertEqual(try backend.list(), [StoredObject(name: "empty", size: 0)], file: file, line: line)
        XCTAssertEqual(try backend.readObject("empty"), [], file: file, line: line)
    }

    func checkListIsSortedAndCommitReplaces(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        try store(pattern(10), as: "b", in: backend)
        try store(pattern(20), as: "a.manifest.jsonl", in: backend)
        try store(pattern(30), as: "c_x.tar.zst", in: backend)
        try store(pattern(5, seed: 1), as: "b", in: backend)
        XCTAssertEqual(try backend.list(), [StoredObject(name: "a.manifest.jsonl", size: 20), StoredObject(name: "b", size: 5),
                                            StoredObject(name: "c_x.tar.zst", size: 30)], file: file, line: line)
        XCTAssertEqual(try backend.readObject("b"), pattern(5, seed: 1), file: file, line: line)
    }

    func checkAbortLeavesNothing(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        let pending = try backend.create("gone.tar.zst")
        try pattern(100_000).withUnsafeBytes { try pending.write($0) }
        XCTAssertTrue(try rawNames(backend).contains(where: isTemporaryName), "a store in progress has a temporary",
                      file: file, line: line)
        pending.abort()
        pending.abort() // twice is safe
        XCTAssertEqual(try backend.list(), [], file: file, line: line)
        XCTAssertEqual(try rawNames(backend), [], "no temporary left", file: file, line: line)
        XCTAssertThrowsError(try [1, 2, 3].withUnsafeBytes { try pending.write($0) }, "writing after abort",
                             file: file, line: line)
        try pending.commit() // after abort: does nothing, makes nothing visible
        XCTAssertEqual(try backend.list(), [], file: file, line: line)
        XCTAssertThrowsError(try backend.open("gone.tar.zst"), file: file, line: line)
    }

    func checkListNeverShowsTemporariesOrTheLock(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        try store(pattern(3), as: "kept", in: backend)
        let lock = try backend.acquireLock(.current(operation: "test"))
        defer { lock.release() }
        let pending = try backend.create("in-progress")
        defer { pending.abort() }
        try pattern(3).withUnsafeBytes { try pending.write($0) }
        _ = try plantLeftover(backend)
        let raw = try rawNames(backend)
        XCTAssertTrue(raw.contains(lockName), "\(raw)", file: file, line: line)
        XCTAssertGreaterThanOrEqual(raw.filter(isTemporaryName).count, 2, "\(raw)", file: file, line: line)
        XCTAssertEqual(try backend.list().map(\.name), ["kept"], file: file, line: line)
    }

    func checkOpenReadsTheBytesInChunks(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        let bytes = pattern(200_001)
        try store(bytes, as: "data", in: backend)
        let source = try backend.open("data")
        defer { source.close() }
        var collected: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = try chunk.withUnsafeMutableBytes { try source.read(into: $0) }
            if count == 0 { break }
            collected += chunk[0..<count]
        }
        XCTAssertEqual(collected, bytes, file: file, line: line)
        XCTAssertEqual(try chunk.withUnsafeMutableBytes { try source.read(into: $0) }, 0, "stays at the end",
                       file: file, line: line)
        XCTAssertEqual(try backend.readObject("data"), bytes, file: file, line: line)
        XCTAssertThrowsError(try backend.readObject("data", limit: 1000), file: file, line: line) { error in
            XCTAssertEqual(error as? StorageError, .tooLarge(limit: 1000), file: file, line: line)
        }
    }

    /// An object of many MiB written in pieces of every size (small ones buffered, big ones
    /// written through, writeback started on the way) reads back whole after commit.
    func checkBigObjectWrittenInPiecesOfEverySize(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        let bytes = pattern(21 << 20, seed: 3)
        let pending = try backend.create("big")
        var offset = 0, piece = 1
        while offset < bytes.count {
            let end = min(bytes.count, offset + piece)
            try bytes[offset..<end].withUnsafeBytes { try pending.write($0) }
            offset = end
            piece = piece < (3 << 20) ? piece * 5 + 3 : 1
        }
        try pending.commit()
        XCTAssertEqual(try backend.list().first { $0.name == "big" }?.size, Int64(bytes.count), file: file, line: line)
        XCTAssertEqual(try backend.readObject("big"), bytes, file: file, line: line)
    }

    func checkDelete(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        try store(pattern(4), as: "x", in: backend)
        try store(pattern(4), as: "y", in: backend)
        try backend.delete("x")
        XCTAssertEqual(try backend.list().map(\.name), ["y"], file: file, line: line)
        XCTAssertThrowsError(try backend.open("x"), file: file, line: line)
    }

    func checkMoveRenamesAndReplaces(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        try store(pattern(4), as: "x", in: backend)
        try store(pattern(8), as: "y", in: backend)
        try backend.move("x", to: "y")
        XCTAssertEqual(try backend.list().map(\.name), ["y"], file: file, line: line)
        XCTAssertEqual(try backend.readObject("y"), pattern(4), file: file, line: line)
        XCTAssertThrowsError(try backend.move("missing", to: "z"), file: file, line: line) { error in
            XCTAssertEqual(error as? StorageError, .notFound(name: "missing", destination: backend.location), file: file, line: line)
        }
    }

    func checkMissingObjectsAreNotFound(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        for attempt in [{ _ = try backend.open("missing") }, { _ = try backend.readObject("missing") }] {
            XCTAssertThrowsError(try attempt(), file: file, line: line) { error in
                XCTAssertEqual(error as? StorageError, .notFound(name: "missing", destination: backend.location),
                               file: file, line: line)
            }
        }
    }

    func checkBadObjectNamesAreRefused(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        try store(pattern(2), as: "safe", in: backend)
        for name in ["a/b", "/abs", "../escape", ".hidden", ".tmp-sneaky", "", "sub/", "nul\0byte"] {
            XCTAssertThrowsError(try backend.create(name), "create '\(name)'", file: file, line: line) {
                XCTAssertTrue($0 is StorageError, "\($0)", file: file, line: line)
            }
            XCTAssertThrowsError(try backend.open(name), "open '\(name)'", file: file, line: line) {
                XCTAssertTrue($0 is StorageError, "\($0)", file: file, line: line)
            }
            XCTAssertThrowsError(try backend.delete(name), "delete '\(name)'", file: file, line: line) {
                XCTAssertTrue($0 is StorageError, "\($0)", file: file, line: line)
            }
        }
        XCTAssertEqual(try backend.list().map(\.name), ["safe"], file: file, line: line)
        XCTAssertFalse(try rawNames(backend).contains(where: isTemporaryName), file: file, line: line)
    }

    func checkSecondLockIsRefusedNamingTheHolder(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        let first = try backend.acquireLock(.current(operation: "backup"))
        defer { first.release() }
        XCTAssertNil(first.tookOverFrom, file: file, line: line)
        XCTAssertThrowsError(try backend.acquireLock(.current(operation: "prune")), file: file, line: line) { error in
            guard case .held(let holder, let destination)? = error as? LockError else {
                return XCTFail("expected LockError.held, got \(error)", file: file, line: line)
            }
            XCTAssertEqual(holder.pid, getpid(), file: file, line: line)
            XCTAssertEqual(holder.host, HostIdentity.hostName, file: file, line: line)
            XCTAssertEqual(holder.operation, "backup", file: file, line: line)
            XCTAssertEqual(destination, backend.location, file: file, line: line)
            let message = "\(error)"
            XCTAssertTrue(message.contains("pid \(getpid())") && message.contains(HostIdentity.hostName), message,
                          file: file, line: line)
        }
        let raw = try rawNames(backend)
        XCTAssertEqual(raw, [lockName], "the failed attempt leaves nothing", file: file, line: line)
    }

    func checkReleaseThenAcquireWorks(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        let first = try backend.acquireLock(.current(operation: "backup"))
        first.release()
        first.release() // twice is safe
        XCTAssertFalse(try rawNames(backend).contains(lockName), file: file, line: line)
        let second = try backend.acquireLock(.current(operation: "backup"))
        XCTAssertNil(second.tookOverFrom, file: file, line: line)
        second.release()
        XCTAssertEqual(try rawNames(backend), [], file: file, line: line)
    }

    func checkStaleLockIsTakenOver(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        let stale = LockOwner(pid: StorageConformanceSuite.deadPID, host: HostIdentity.hostName,
                              started: Date(timeIntervalSince1970: 1_700_000_000), operation: "backup",
                              processStartTicks: 12_345)
        try plantLock(backend, stale)
        XCTAssertTrue(stale.isStaleOnThisHost, file: file, line: line)
        let lock = try backend.acquireLock(.current(operation: "backup"))
        defer { lock.release() }
        XCTAssertEqual(lock.tookOverFrom, stale, file: file, line: line)
        XCTAssertThrowsError(try backend.acquireLock(.current(operation: "again")), "the new lock holds",
                             file: file, line: line) { error in
            guard case .held(let holder, _)? = error as? LockError else { return XCTFail("\(error)", file: file, line: line) }
            XCTAssertEqual(holder.pid, getpid(), file: file, line: line)
        }
        XCTAssertEqual(try rawNames(backend), [lockName], "no stale copy left aside", file: file, line: line)
    }

    func checkLockOfAnotherHostIsNotTakenOver(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        let foreign = LockOwner(pid: StorageConformanceSuite.deadPID, host: "elsewhere.invalid",
                                started: Date(timeIntervalSince1970: 1_700_000_000), operation: "backup",
                                processStartTicks: nil)
        try plantLock(backend, foreign)
        XCTAssertFalse(foreign.isStaleOnThisHost, file: file, line: line)
        XCTAssertThrowsError(try backend.acquireLock(.current(operation: "backup")), file: file, line: line) { error in
            XCTAssertEqual(error as? LockError, .held(by: foreign, destination: backend.location), file: file, line: line)
        }
        XCTAssertEqual(try rawNames(backend), [lockName], file: file, line: line)
    }

    func checkRemoveLeftovers(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        try store(pattern(8), as: "committed", in: backend)
        let lock = try backend.acquireLock(.current(operation: "backup"))
        defer { lock.release() }
        let first = try plantLeftover(backend)
        let second = try plantLeftover(backend)
        let removed = try backend.removeLeftovers()
        XCTAssertEqual(Set(removed), Set([first, second]), file: file, line: line)
        XCTAssertEqual(try rawNames(backend).sorted(), ["committed", lockName].sorted(), file: file, line: line)
        XCTAssertEqual(try backend.removeLeftovers(), [], "nothing left the second time", file: file, line: line)
        XCTAssertEqual(try backend.readObject("committed"), pattern(8), file: file, line: line)
    }

    /// Every check, in order (for a backend that wants one test method).
    func runAll() throws {
        try checkPrepareIsIdempotentAndStartsEmpty()
        try checkCommitMakesObjectVisibleWithItsSize()
        try checkEmptyObject()
        try checkListIsSortedAndCommitReplaces()
        try checkAbortLeavesNothing()
        try checkListNeverShowsTemporariesOrTheLock()
        try checkOpenReadsTheBytesInChunks()
        try checkDelete()
        try checkMoveRenamesAndReplaces()
        try checkMissingObjectsAreNotFound()
        try checkBadObjectNamesAreRefused()
        try checkSecondLockIsRefusedNamingTheHolder()
        try checkReleaseThenAcquireWorks()
        try checkStaleLockIsTakenOver()
        try checkLockOfAnotherHostIsNotTakenOver()
        try checkRemoveLeftovers()
    }
}

// MARK: - LocalFolderBackend

final class StorageConformanceTests: KeepsakeTestCase {
    // MARK: Setup

    private var root = ""
    private var counter = 0

    override func setUpWithError() throws {
        try super.setUpWithError()
        root = try makeTemporaryDirectory("storage")
        counter = 0
    }

    override func tearDownWithError() throws {
        removeTemporaryDirectory(root)
        try super.tearDownWithError()
    }

    /// The suite for local folders: each destination a fresh, not yet existing folder.
    private var suite: StorageConformanceSuite {
        StorageConformanceSuite(
            makeBackend: { [unowned self] in
                counter += 1
                return LocalFolderBackend(path: root + "/parents/dest-\(counter)")
            },
            rawNames: { backend in
                rawDirectoryNames((backend as! LocalFolderBackend).path)
            },
            plantLock: { backend, owner in
                let path = (backend as! LocalFolderBackend).path + "/" + LocalFolderBackend.lockName
                try writeFile(path, owner.json.serialized() + "\n")
            },
            plantLeftover: { backend in
                let name = LocalFolderBackend.temporaryPrefix + "box_x.tar.zst-\(StorageConformanceSuite.deadPID)-"
                    + String(UInt32.random(in: 0...UInt32.max), radix: 16)
                try writeFile((backend as! LocalFolderBackend).path + "/" + name, "half an archive")
                return name
            },
            isTemporaryName: { $0.hasPrefix(LocalFolderBackend.temporaryPrefix) },
            lockName: LocalFolderBackend.lockName
        )
    }

    // MARK: Conformance

    func testPrepareIsIdempotentAndStartsEmpty() throws { try suite.checkPrepareIsIdempotentAndStartsEmpty() }
    func testCommitMakesObjectVisibleWithItsSize() throws { try suite.checkCommitMakesObjectVisibleWithItsSize() }
    func testEmptyObject() throws { try suite.checkEmptyObject() }
    func testListIsSortedAndCommitReplaces() throws { try suite.checkListIsSortedAndCommitReplaces() }
    func testAbortLeavesNothing() throws { try suite.checkAbortLeavesNothing() }
    func testListNeverShowsTemporariesOrTheLock() throws { try suite.checkListNeverShowsTemporariesOrTheLock() }
    func testOpenReadsTheBytesInChunks() throws { try suite.checkOpenReadsTheBytesInChunks() }
    func testBigObjectWrittenInPiecesOfEverySize() throws { try suite.checkBigObjectWrittenInPiecesOfEverySize() }
    func testDelete() throws { try suite.checkDelete() }
    func testMoveRenamesAndReplaces() throws { try suite.checkMoveRenamesAndReplaces() }
    func testMissingObjectsAreNotFound() throws { try suite.checkMissingObjectsAreNotFound() }
    func testBadObjectNamesAreRefused() throws { try suite.checkBadObjectNamesAreRefused() }
    func testSecondLockIsRefusedNamingTheHolder() throws { try suite.checkSecondLockIsRefusedNamingTheHolder() }
    func testReleaseThenAcquireWorks() throws { try suite.checkReleaseThenAcquireWorks() }
    func testStaleLockIsTakenOver() throws { try suite.checkStaleLockIsTakenOver() }
    func testLockOfAnotherHostIsNotTakenOver() throws { try suite.checkLockOfAnotherHostIsNotTakenOver() }
    func testRemoveLeftovers() throws { try suite.checkRemoveLeftovers() }

    // MARK: Local folder specifics

    func testPrepareCreatesFolderForOwnerOnlyWithParents() throws {
        let path = root + "/a/b/dest"
        let backend = LocalFolderBackend(path: path)
        XCTAssertEqual(backend.location, path)
        XCTAssertNil(lstatInfo(path), "nothing is created before prepare")
        XCTAssertEqual(try backend.list(), [], "listing a destination that does not exist yet is empty")
        try backend.prepare()
        let info = try XCTUnwrap(lstatInfo(path))
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFDIR)
        XCTAssertEqual(info.st_mode & 0o7777, 0o700)
    }

    func testPrepareKeepsAnExistingFolderAsItIs() throws {
        let path = root + "/existing"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        chmod(path, 0o755)
        try LocalFolderBackend(path: path).prepare()
        XCTAssertEqual(try XCTUnwrap(lstatInfo(path)).st_mode & 0o7777, 0o755)
    }

    func testPrepareRefusesAFile() throws {
        let path = root + "/file"
        try writeFile(path, "x")
        XCTAssertThrowsError(try LocalFolderBackend(path: path).prepare()) { error in
            guard case .unusable(let destination, _)? = error as? StorageError else { return XCTFail("\(error)") }
            XCTAssertEqual(destination, path)
        }
    }

    func testCommittedObjectIsOwnerOnly() throws {
        let backend = LocalFolderBackend(path: root + "/dest")
        try backend.prepare()
        let pending = try backend.create("obj")
        try pending.commit()
        XCTAssertEqual(try XCTUnwrap(lstatInfo(root + "/dest/obj")).st_mode & 0o777, 0o600)
    }

    func testListSkipsFoldersSymlinksAndHiddenFiles() throws {
        let path = root + "/dest"
        let backend = LocalFolderBackend(path: path)
        try backend.prepare()
        try writeFile(path + "/real", "1234")
        try writeFile(path + "/.hidden", "x")
        try FileManager.default.createDirectory(atPath: path + "/folder", withIntermediateDirectories: false)
        symlink("real", path + "/link")
        try createFile(named: [0x62, 0xff], in: path, contents: [1])
        XCTAssertEqual(try backend.list(), [StoredObject(name: "real", size: 4)])
    }

    func testOpenNeverFollowsASymlink() throws {
        let path = root + "/dest"
        let backend = LocalFolderBackend(path: path)
        try backend.prepare()
        try writeFile(root + "/outside", "not a backup")
        XCTAssertEqual(symlink(root + "/outside", path + "/box_20261129T023000Z-3f9a1c2e.tar.zst"), 0)
        XCTAssertThrowsError(try backend.open("box_20261129T023000Z-3f9a1c2e.tar.zst")) { error in
            XCTAssertTrue("\(error)".contains("symbolic link"), "\(error)")
        }
    }

    func testLockFileNamesTheHolder() throws {
        let path = root + "/dest"
        let backend = LocalFolderBackend(path: path)
        try backend.prepare()
        let lock = try backend.acquireLock(.current(operation: "verify"))
        defer { lock.release() }
        let text = try String(contentsOfFile: path + "/keepsake.lock", encoding: .utf8)
        let owner = try XCTUnwrap(LockOwner(json: try JSONParser.parse(text.trimmingCharacters(in: .newlines))))
        XCTAssertEqual(owner.pid, getpid())
        XCTAssertEqual(owner.host, HostIdentity.hostName)
        XCTAssertEqual(owner.operation, "verify")
        XCTAssertEqual(owner.processStartTicks, LockOwner.startTicks(of: getpid()))
    }

    func testLockWithRecycledPidIsStale() throws {
        let path = root + "/dest"
        let backend = LocalFolderBackend(path: path)
        try backend.prepare()
        // Our own pid, but a different start time: the recorded process is gone.
        let ticks = try XCTUnwrap(LockOwner.startTicks(of: getpid()))
        let recycled = LockOwner(pid: getpid(), host: HostIdentity.hostName, started: Date(), operation: "backup",
                                 processStartTicks: ticks + 1)
        try writeFile(path + "/keepsake.lock", recycled.json.serialized())
        let lock = try backend.acquireLock(.current(operation: "backup"))
        defer { lock.release() }
        XCTAssertEqual(lock.tookOverFrom?.processStartTicks, ticks + 1)
    }

    func testUnreadableFreshLockIsNotStolen() throws {
        let path = root + "/dest"
        let backend = LocalFolderBackend(path: path)
        try backend.prepare()
        try writeFile(path + "/keepsake.lock", "")
        XCTAssertThrowsError(try backend.acquireLock(.current(operation: "backup"))) { error in
            XCTAssertTrue(error is LockError, "\(error)")
        }
        // Once old, an unreadable lock is a crash leftover and is taken over.
        var times = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        XCTAssertEqual(utimensat(AT_FDCWD, path + "/keepsake.lock", &times, 0), 0)
        let lock = try backend.acquireLock(.current(operation: "backup"))
        lock.release()
    }

    func testRemoveLeftoversSparesLiveLockAttempts() throws {
        let path = root + "/dest"
        let backend = LocalFolderBackend(path: path)
        try backend.prepare()
        let live = ".tmp-lock-\(getppid())"
        let dead = ".tmp-lock-\(StorageConformanceSuite.deadPID)"
        try writeFile(path + "/" + live, "{}")
        try writeFile(path + "/" + dead, "{}")
        XCTAssertEqual(try backend.removeLeftovers(), [dead])
        XCTAssertEqual(rawDirectoryNames(path), [live])
    }

    func testRemoveLeftoversSparesTemporariesOfLiveRuns() throws {
        let path = root + "/dest"
        let backend = LocalFolderBackend(path: path)
        try backend.prepare()
        // The parent process (the test runner) is alive: its temporary is work in progress.
        let live = ".tmp-host_20250101T000000Z-deadbeef.tar.zst-\(getppid())-abcdef"
        let dead = ".tmp-host_20250101T000000Z-deadbeef.tar.zst-\(StorageConformanceSuite.deadPID)-abcdef"
        try writeFile(path + "/" + live, "being written")
        try writeFile(path + "/" + dead, "half an archive")
        XCTAssertEqual(try backend.removeLeftovers(), [dead])
        XCTAssertEqual(rawDirectoryNames(path), [live])
    }

    // MARK: Hostile destinations

    /// Symbolic links planted at every name the backend could predict (this process's lock
    /// attempt and stale-lock names) point outside the destination: taking the lock, over a
    /// stale one or not, storing and releasing leave the outside file as it was.
    func testSymlinksAtPredictableNamesAreNotFollowed() throws {
        let path = root + "/dest"
        let backend = LocalFolderBackend(path: path)
        try backend.prepare()
        chmod(path, 0o777)
        let outside = root + "/outside.txt"
        try writeFile(outside, "precious\n")
        let pid = getpid()
        let names = [".tmp-lock-\(pid)", ".tmp-stale-lock-\(pid)"]
        for round in 0..<2 {
            for name in names where lstatInfo(path + "/" + name) == nil {
                XCTAssertEqual(symlink(outside, path + "/" + name), 0, name)
            }
            if round == 1 {
                let stale = LockOwner(pid: StorageConformanceSuite.deadPID, host: HostIdentity.hostName,
                                      started: Date(timeIntervalSince1970: 1_700_000_000), operation: "backup",
                                      processStartTicks: nil)
                try writeFile(path + "/" + LocalFolderBackend.lockName, stale.json.serialized() + "\n")
            }
            let lock = try backend.acquireLock(.current(operation: "backup"))
            let pending = try backend.create("object")
            try [1, 2, 3].withUnsafeBytes { try pending.write($0) }
            try pending.commit()
            lock.release()
            XCTAssertEqual(try String(contentsOfFile: outside, encoding: .utf8), "precious\n", "round \(round)")
            XCTAssertEqual(try XCTUnwrap(lstatInfo(outside)).st_nlink, 1, "no name in the destination links to it")
            XCTAssertNil(lstatInfo(path + "/" + LocalFolderBackend.lockName), "round \(round): the lock is released")
        }
    }

    /// A lock file that is a symbolic link (planted by someone else) is refused with a
    /// message naming it; nothing outside is touched.
    func testLockThatIsASymlinkIsRefused() throws {
        let path = root + "/dest"
        let backend = LocalFolderBackend(path: path)
        try backend.prepare()
        let outside = root + "/outside.txt"
        try writeFile(outside, "precious\n")
        XCTAssertEqual(symlink(outside, path + "/" + LocalFolderBackend.lockName), 0)
        XCTAssertThrowsError(try backend.acquireLock(.current(operation: "backup"))) { error in
            XCTAssertTrue("\(error)".contains(LocalFolderBackend.lockName), "\(error)")
        }
        XCTAssertEqual(try String(contentsOfFile: outside, encoding: .utf8), "precious\n")
    }

    // MARK: Lock ownership

    /// A run whose lock was replaced (judged stale by another run, which took it over)
    /// must not remove the other run's lock when it releases its own.
    func testReleaseLeavesALockThatReplacedIt() throws {
        let path = root + "/dest"
        let backend = LocalFolderBackend(path: path)
        try backend.prepare()
        let lock = try backend.acquireLock(.current(operation: "backup"))
        let other = LockOwner(pid: getppid(), host: HostIdentity.hostName, started: Date(), operation: "prune",
                              processStartTicks: LockOwner.startTicks(of: getppid()))
        let text = other.json.serialized() + "\n"
        try writeFile(path + "/.replacement", text)
        XCTAssertEqual(rename(path + "/.replacement", path + "/" + LocalFolderBackend.lockName), 0)
        lock.release()
        XCTAssertEqual(try String(contentsOfFile: path + "/" + LocalFolderBackend.lockName, encoding: .utf8), text,
                       "the other run's lock is left in place")
    }

    /// Eight threads at a time, each with its own backend, take over one stale lock (a dead
    /// pid on this host), 150 rounds: in every round exactly one gets the lock (the others
    /// get LockError naming it), and no lock attempt is left behind.
    func testConcurrentTakeoverOfAStaleLockHasOneWinner() throws {
        let path = root + "/dest"
        try LocalFolderBackend(path: path).prepare()
        let stale = LockOwner(pid: StorageConformanceSuite.deadPID, host: HostIdentity.hostName,
                              started: Date(timeIntervalSince1970: 1_700_000_000), operation: "backup",
                              processStartTicks: nil)
        let rounds = 150
        var doubleWinners = 0
        for round in 0..<rounds {
            try writeFile(path + "/" + LocalFolderBackend.lockName, stale.json.serialized() + "\n")
            let outcomes = RaceOutcomes()
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                do {
                    let lock = try LocalFolderBackend(path: path).acquireLock(.current(operation: "backup"))
                    outcomes.add(winner: lock)
                } catch {
                    outcomes.add(error: error)
                }
            }
            let (winners, errors) = outcomes.result()
            if winners.count > 1 { doubleWinners += 1 }
            XCTAssertEqual(winners.count, 1, "round \(round): exactly one takes the lock over; errors: \(errors)")
            XCTAssertEqual(errors.filter { !($0 is LockError) }.map { "\($0)" }, [], "round \(round): losers are told it is locked")
            for winner in winners { winner.release() }
            XCTAssertEqual(rawDirectoryNames(path), [], "round \(round): nothing is left once released")
            if (testRun?.failureCount ?? 0) > 5 { break }
        }
        XCTAssertEqual(doubleWinners, 0, "rounds with more than one holder")
    }

    func testPendingObjectDroppedWithoutCommitLeavesNothing() throws {
        let path = root + "/dest"
        let backend = LocalFolderBackend(path: path)
        try backend.prepare()
        do {
            let pending = try backend.create("dropped")
            try [1, 2, 3].withUnsafeBytes { try pending.write($0) }
        }
        XCTAssertEqual(try backend.list(), [])
        XCTAssertEqual(rawDirectoryNames(path), [])
    }

    func testRemoveLeftoversOnMissingFolderIsEmpty() throws {
        XCTAssertEqual(try LocalFolderBackend(path: root + "/never-made").removeLeftovers(), [])
    }
}

// MARK: - Race bookkeeping

/// What the threads of one takeover round got: lock handles (kept, so nobody releases
/// before every thread has tried) and errors.
private final class RaceOutcomes: @unchecked Sendable {
    private let guardLock = NSLock()
    private var winners: [DestinationLock] = []
    private var errors: [Error] = []

    func add(winner: DestinationLock) {
        guardLock.withLock { winners.append(winner) }
    }

    func add(error: Error) {
        guardLock.withLock { errors.append(error) }
    }

    func result() -> ([DestinationLock], [Error]) {
        guardLock.withLock { (winners, errors) }
    }
}
