import Foundation
import KeepsakeJSON
@testable import KeepsakeStorage
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// The local folder against the conformance suite, and what only a local folder promises.
final class LocalFolderConformanceTests: KeepsakeTestCase {
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
                let path = (backend as! LocalFolderBackend).path + "/" + FolderNaming.lockName
                try writeFile(path, owner.json.serialized() + "\n")
            },
            plantLeftover: { backend in
                let name = FolderNaming.temporaryPrefix + "box_x.tar.zst-\(StorageConformanceSuite.deadPID)-"
                    + String(UInt32.random(in: 0...UInt32.max), radix: 16)
                try writeFile((backend as! LocalFolderBackend).path + "/" + name, "half an archive")
                return name
            },
            isTemporaryName: { $0.hasPrefix(FolderNaming.temporaryPrefix) },
            lockName: FolderNaming.lockName
        )
    }

    // MARK: Conformance
    //
    // Every check of the suite, a group per test method: a failure names the check's line.

    func testConformanceOfStoring() { suite.run(.storing) }
    func testConformanceOfReading() { suite.run(.reading) }
    func testConformanceOfNames() { suite.run(.names) }
    func testConformanceOfLocking() { suite.run(.locking) }

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
                try writeFile(path + "/" + FolderNaming.lockName, stale.json.serialized() + "\n")
            }
            let lock = try backend.acquireLock(.current(operation: "backup"))
            let pending = try backend.create("object")
            try [1, 2, 3].withUnsafeBytes { try pending.write($0) }
            try pending.commit()
            lock.release()
            XCTAssertEqual(try String(contentsOfFile: outside, encoding: .utf8), "precious\n", "round \(round)")
            XCTAssertEqual(try XCTUnwrap(lstatInfo(outside)).st_nlink, 1, "no name in the destination links to it")
            XCTAssertNil(lstatInfo(path + "/" + FolderNaming.lockName), "round \(round): the lock is released")
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
        XCTAssertEqual(symlink(outside, path + "/" + FolderNaming.lockName), 0)
        XCTAssertThrowsError(try backend.acquireLock(.current(operation: "backup"))) { error in
            XCTAssertTrue("\(error)".contains(FolderNaming.lockName), "\(error)")
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
        XCTAssertEqual(rename(path + "/.replacement", path + "/" + FolderNaming.lockName), 0)
        lock.release()
        XCTAssertEqual(try String(contentsOfFile: path + "/" + FolderNaming.lockName, encoding: .utf8), text,
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
            try writeFile(path + "/" + FolderNaming.lockName, stale.json.serialized() + "\n")
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
/// before every thread has tried) and errors. (The rclone checks race for locks too.)
final class RaceOutcomes: @unchecked Sendable {
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
