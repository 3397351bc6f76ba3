import Foundation
import KeepsakeHashing
import KeepsakeJSON
@testable import KeepsakeStorage
@testable import KeepsakeRclone
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// What the rclone backend promises beyond the conformance suite, checked on any rclone
/// remote (`RcloneTestRemote`); a test class calls each `check…` from a test method.
struct RcloneBackendChecks {
    // MARK: Configuration

    let remote: RcloneTestRemote

    private func prepared(cancellation: CancellationFlag? = nil) throws -> RcloneBackend {
        let backend = remote.backend(cancellation: cancellation)
        try backend.prepare()
        return backend
    }

    private func store(_ bytes: [UInt8], as name: String, in backend: WritableStorage) throws {
        let pending = try backend.create(name)
        try bytes.withUnsafeBytes { try pending.write($0) }
        try pending.commit()
    }

    // MARK: Setting up

    func checkLocationIsTheAddress(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = remote.backend(path: "some/path")
        XCTAssertEqual(backend.location, "rclone:\(remote.name):some/path", file: file, line: line)
        XCTAssertEqual(backend.location, DestinationAddress.rclone(remote: remote.name, path: "some/path").description,
                       file: file, line: line)
        XCTAssertEqual(try backend.objectPath("x"), "\(remote.name):some/path/x", file: file, line: line)
        XCTAssertEqual(try remote.backend(path: "").objectPath("x"), "\(remote.name):x", file: file, line: line)
        XCTAssertEqual(try remote.backend(path: "/").objectPath("x"), "\(remote.name):/x", file: file, line: line)
    }

    /// An rclone that cannot be found or run is named, with what to do, by every operation.
    func checkMissingProgramIsNamed(file: StaticString = #filePath, line: UInt = #line) throws {
        for (program, expected) in [("/nonexistent/keepsake-test/rclone", "/nonexistent/keepsake-test/rclone"),
                                    ("keepsake-no-such-rclone", "no program 'keepsake-no-such-rclone' on PATH")] {
            let backend = remote.backend(rclone: program)
            let attempts: [(String, () throws -> Void)] = [
                ("prepare", { try backend.prepare() }), ("list", { _ = try backend.list() }),
                ("create", { _ = try backend.create("x") }), ("open", { _ = try backend.open("x") }),
                ("lock", { _ = try backend.acquireLock(.current(operation: "test")) }),
            ]
            for (operation, attempt) in attempts {
                XCTAssertThrowsError(try attempt(), "\(program) \(operation)", file: file, line: line) { error in
                    guard case .unusable(let destination, let reason)? = error as? StorageError else {
                        return XCTFail("\(operation): \(error)", file: file, line: line)
                    }
                    XCTAssertEqual(destination, backend.location, file: file, line: line)
                    XCTAssertTrue(reason.contains(expected) && reason.contains("install rclone"), reason, file: file, line: line)
                }
            }
        }
    }

    /// A remote the configuration does not have is named, with where to look.
    func checkUnknownRemoteIsNamed(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = remote.backend(remoteName: "keepsake-no-such-remote")
        let attempts: [(String, () throws -> Void)] = [
            ("prepare", { try backend.prepare() }), ("list", { _ = try backend.list() }),
            ("open", { _ = try backend.open("x") }),
            ("store", {
                let pending = try backend.create("x")
                try [1, 2, 3].withUnsafeBytes { try pending.write($0) }
                try pending.commit()
            }),
        ]
        for (operation, attempt) in attempts {
            XCTAssertThrowsError(try attempt(), operation, file: file, line: line) { error in
                guard case .unusable(let destination, let reason)? = error as? StorageError else {
                    return XCTFail("\(operation): \(error)", file: file, line: line)
                }
                XCTAssertEqual(destination, "rclone:keepsake-no-such-remote:" + backend.path, file: file, line: line)
                XCTAssertTrue(reason.contains("no remote 'keepsake-no-such-remote'") && reason.contains("rclone config"), reason,
                              file: file, line: line)
                XCTAssertFalse(reason.contains(remote.configPath), "no environment values in messages", file: file, line: line)
            }
        }
    }

    // MARK: Storing

    /// A store rclone fails names the object and gives rclone's reason, and leaves nothing.
    func checkFailedStoreNamesTheObjectAndRclonesReason(file: StaticString = #filePath, line: UInt = #line) throws {
        let base = try prepared()
        try remote.put([1], as: "blocker", in: base)
        // A destination that is a file: rcat cannot store anything in it.
        let backend = remote.backend(path: try XCTUnwrap(base.objectPath("blocker").split(separator: ":", maxSplits: 1).last)
            .description)
        let pending = try backend.create("box.tar.zst")
        let bytes = [UInt8](repeating: 7, count: 1 << 20)
        let error: Error? = {
            do {
                for _ in 0..<4 { try bytes.withUnsafeBytes { try pending.write($0) } }
                try pending.commit()
                return nil
            } catch {
                return error
            }
        }()
        let failure = try XCTUnwrap(error as? StorageError, "\(String(describing: error))", file: file, line: line)
        let message = "\(failure)"
        XCTAssertTrue(message.contains("box.tar.zst") && message.contains("not a directory"), message, file: file, line: line)
        XCTAssertFalse(message.contains("\n"), message, file: file, line: line)
        XCTAssertEqual(try remote.rawNames(of: base), ["blocker"], file: file, line: line)
    }

    /// 50 MiB streamed through rcat arrive whole (same SHA-256), while this process's memory
    /// grows by far less than the object.
    func checkBigStreamKeepsMemoryBounded(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        let chunkSize = 1 << 20, chunks = 50
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        let written = SHA256Hasher()
        let before = RcloneBackendChecks.residentBytes()
        var peak = before
        let pending = try backend.create("big.bin")
        for index in 0..<chunks {
            for position in stride(from: 0, to: chunkSize, by: 8) { chunk[position] = UInt8(truncatingIfNeeded: index &* 131 &+ position >> 3) }
            written.update(chunk)
            try chunk.withUnsafeBytes { try pending.write($0) }
            peak = max(peak, RcloneBackendChecks.residentBytes())
        }
        try pending.commit()
        XCTAssertEqual(try backend.list(), [StoredObject(name: "big.bin", size: Int64(chunkSize * chunks))], file: file, line: line)
        // Read back as a stream, hashing as it comes.
        let read = SHA256Hasher()
        let source = try backend.open("big.bin")
        defer { source.close() }
        var total = 0
        while true {
            let count = try chunk.withUnsafeMutableBytes { try source.read(into: $0) }
            if count == 0 { break }
            total += count
            read.update(Array(chunk[0..<count]))
            peak = max(peak, RcloneBackendChecks.residentBytes())
        }
        XCTAssertEqual(total, chunkSize * chunks, file: file, line: line)
        XCTAssertEqual(read.finalizeHex(), written.finalizeHex(), file: file, line: line)
        XCTAssertLessThan(peak - before, 20 << 20, "memory grew by \(peak - before) bytes", file: file, line: line)
    }

    /// rclone 1.60's moveto keeps an existing object of the same size and modification time
    /// (and deletes the source): a replacement must still carry the new bytes.
    func checkReplacingAnObjectOfTheSameSizeAndTime(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        try store(Array("AAAA".utf8), as: "old", in: backend)
        try store(Array("BBBB".utf8), as: "new", in: backend)
        for name in ["old", "new"] { try remote.touch(name, in: backend, at: "2020-01-02T03:04:05") }
        try backend.move("new", to: "old")
        XCTAssertEqual(try backend.readObject("old"), Array("BBBB".utf8), file: file, line: line)
        XCTAssertEqual(try backend.list().map(\.name), ["old"], file: file, line: line)
    }

    /// A store stopped by the cancellation flag ends rcat and leaves no temporary behind.
    func checkCancellationStopsTheUpload(file: StaticString = #filePath, line: UInt = #line) throws {
        let cancellation = CancellationFlag()
        let backend = try prepared(cancellation: cancellation)
        let pending = try backend.create("stopped")
        let bytes = [UInt8](repeating: 1, count: 256 << 10)
        try bytes.withUnsafeBytes { try pending.write($0) }
        cancellation.cancel()
        XCTAssertThrowsError(try bytes.withUnsafeBytes { buffer in
            // The pipe may take a little more before the wait that notices the flag.
            for _ in 0..<64 { try pending.write(buffer) }
        }, file: file, line: line) { error in
            XCTAssertEqual(error as? Interruption, Interruption(), "\(error)", file: file, line: line)
        }
        XCTAssertThrowsError(try backend.list(), file: file, line: line) { error in
            XCTAssertEqual(error as? Interruption, Interruption(), "\(error)", file: file, line: line)
        }
        pending.abort()
        XCTAssertEqual(try remote.rawNames(of: backend), [], "the temporary is removed even so", file: file, line: line)
    }

    // MARK: Reading and listing

    func checkListSkipsFoldersAndDotNames(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        try remote.put(Array("1234".utf8), as: "real", in: backend)
        try remote.put([1], as: ".hidden", in: backend)
        try remote.rcloneSucceeding(["mkdir", "--", try backend.objectPath("folder")])
        try remote.put([1], as: "folder/inside", in: backend)
        XCTAssertEqual(try backend.list(), [StoredObject(name: "real", size: 4)], file: file, line: line)
        XCTAssertThrowsError(try backend.open("folder"), file: file, line: line) { error in
            XCTAssertTrue("\(error)".contains("folder, not an object"), "\(error)", file: file, line: line)
        }
        XCTAssertThrowsError(try backend.move("folder", to: "elsewhere"), file: file, line: line)
        XCTAssertEqual(try remote.rawNames(of: backend), [".hidden", "folder", "real"], file: file, line: line)
    }

    /// An object deleted after it was opened is reported missing by the next read.
    func checkObjectGoneAfterOpenIsNotFound(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        try store([1, 2, 3, 4], as: "brief", in: backend)
        let source = try backend.open("brief")
        defer { source.close() }
        try backend.delete("brief")
        try backend.delete("brief") // missing: fine
        XCTAssertThrowsError(try source.bytes(at: 1, count: 2), file: file, line: line) { error in
            XCTAssertEqual(error as? StorageError, .notFound(name: "brief", destination: backend.location), file: file, line: line)
        }
        source.close()
        XCTAssertThrowsError(try source.bytes(at: 0, count: 1), "reading after close", file: file, line: line)
    }

    // MARK: Runs

    /// A command lists a destination several times, and every rclone run costs a process
    /// start (over sftp an SSH connection too): the listing is used again, for the size
    /// `open` needs too, until the backend changes the folder or takes the lock; the lock
    /// costs one run to read. The runs are counted by a script in `scratch` that names each
    /// one in a log and hands over to the rclone on the PATH.
    func checkListingIsUsedAgainUntilTheFolderChanges(scratch: String, file: StaticString = #filePath,
                                                       line: UInt = #line) throws {
        let log = scratch + "/rclone-runs"
        let program = scratch + "/counting-rclone"
        try writeFile(program, "#!/bin/sh\necho \"$1\" >> '\(log)'\nexec rclone \"$@\"\n")
        XCTAssertEqual(chmod(program, 0o755), 0, file: file, line: line)
        func runs(_ body: () throws -> Void) throws -> [String] {
            try? FileManager.default.removeItem(atPath: log)
            try body()
            return ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        let backend = remote.backend(rclone: program)
        try backend.prepare()
        try store([1, 2, 3], as: "first", in: backend)

        XCTAssertEqual(try runs { _ = try backend.list() }, ["lsjson"], file: file, line: line)
        XCTAssertEqual(try runs {
            XCTAssertEqual(try backend.list().map(\.name), ["first"], file: file, line: line)
            let source = try backend.open("first")
            defer { source.close() }
            XCTAssertEqual(try source.size(), 3, file: file, line: line)
            _ = try backend.removeLeftovers()
        }, [], "the listing is used again, for the size of an object too", file: file, line: line)

        // Another run's object, stored while this one did not hold the lock: seen once it does.
        try remote.put([9], as: "second", in: backend)
        var lock: DestinationLock?
        XCTAssertEqual(try runs { lock = try backend.acquireLock(.current(operation: "backup")) }, ["cat", "rcat", "cat"],
                       "a free lock: looked at, written, read back", file: file, line: line)
        XCTAssertEqual(try backend.list().map(\.name), ["first", "second"], file: file, line: line)
        try store([4], as: "third", in: backend)
        XCTAssertEqual(try backend.list().map(\.name), ["first", "second", "third"], "its own store", file: file, line: line)
        try backend.move("third", to: "fourth")
        XCTAssertEqual(try backend.list().map(\.name), ["first", "fourth", "second"], "its own rename", file: file, line: line)
        try backend.delete("first")
        XCTAssertEqual(try backend.list().map(\.name), ["fourth", "second"], "its own delete", file: file, line: line)
        XCTAssertThrowsError(try backend.open("first"), file: file, line: line) { error in
            XCTAssertEqual(error as? StorageError, .notFound(name: "first", destination: backend.location), file: file, line: line)
        }
        XCTAssertEqual(try runs { lock?.release() }, ["cat", "deletefile"], "released: read, then removed", file: file, line: line)
        XCTAssertEqual(try remote.rawNames(of: backend), ["fourth", "second"], file: file, line: line)
    }

    // MARK: Locking

    /// The lock record names the holder and holds a token; release leaves a record that
    /// replaced it (another run that took it over).
    func checkLockRecordAndReleaseOfAReplacedLock(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        let lock = try backend.acquireLock(.current(operation: "verify"))
        let json = try JSONParser.parse(try remote.contents(of: RcloneBackend.lockName, in: backend))
        let owner = try XCTUnwrap(LockOwner(json: json), file: file, line: line)
        XCTAssertEqual(owner.pid, getpid(), file: file, line: line)
        XCTAssertEqual(owner.host, HostIdentity.hostName, file: file, line: line)
        XCTAssertEqual(owner.operation, "verify", file: file, line: line)
        XCTAssertTrue(HexEncoding.isHex(json["token"]?.stringValue ?? "", length: 32), "\(json)", file: file, line: line)
        let other = LockOwner(pid: getppid(), host: HostIdentity.hostName, started: Date(), operation: "prune",
                              processStartTicks: LockOwner.startTicks(of: getppid()))
        let text = Array((other.json.serialized() + "\n").utf8)
        try remote.put(text, as: RcloneBackend.lockName, in: backend)
        lock.release()
        XCTAssertEqual(try remote.contents(of: RcloneBackend.lockName, in: backend), text, "the other run's lock stays",
                       file: file, line: line)
    }

    /// An unreadable lock record is being written (held), unless it is old (a crash: taken over).
    func checkUnreadableLockIsHeldUntilOld(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        try remote.put([], as: RcloneBackend.lockName, in: backend)
        XCTAssertThrowsError(try backend.acquireLock(.current(operation: "backup")), file: file, line: line) { error in
            XCTAssertTrue(error is LockError, "\(error)", file: file, line: line)
        }
        try remote.touch(RcloneBackend.lockName, in: backend, at: "2020-01-02T03:04:05")
        let lock = try backend.acquireLock(.current(operation: "backup"))
        XCTAssertNil(lock.tookOverFrom, file: file, line: line)
        lock.release()
        XCTAssertEqual(try remote.rawNames(of: backend), [], file: file, line: line)
    }

    func checkRemoveLeftoversSparesLiveWriters(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        // The parent process (the test runner) is alive: its temporary is work in progress.
        let live = ".tmp-host_20250101T000000Z-deadbeef.tar.zst-\(getppid())-abcdef"
        let dead = ".tmp-host_20250101T000000Z-deadbeef.tar.zst-\(StorageConformanceSuite.deadPID)-abcdef"
        try remote.put(Array("being written".utf8), as: live, in: backend)
        try remote.put(Array("half an archive".utf8), as: dead, in: backend)
        XCTAssertEqual(try backend.removeLeftovers(), [dead], file: file, line: line)
        XCTAssertEqual(try remote.rawNames(of: backend), [live], file: file, line: line)
    }

    /// Four runs at a time, each with its own backend, take one free lock: one gets it, the
    /// others are told who holds it.
    func checkConcurrentRunsGetOneLock(rounds: Int = 2, file: StaticString = #filePath, line: UInt = #line) throws {
        let path = remote.freshPath()
        try remote.backend(path: path).prepare()
        for round in 0..<rounds {
            let outcomes = RaceOutcomes()
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                do {
                    outcomes.add(winner: try remote.backend(path: path).acquireLock(.current(operation: "backup")))
                } catch {
                    outcomes.add(error: error)
                }
            }
            let (winners, errors) = outcomes.result()
            XCTAssertEqual(winners.count, 1, "round \(round): errors \(errors)", file: file, line: line)
            XCTAssertEqual(errors.filter { !($0 is LockError) }.map { "\($0)" }, [], file: file, line: line)
            for winner in winners { winner.release() }
            XCTAssertEqual(try remote.rawNames(of: remote.backend(path: path)), [], "round \(round)", file: file, line: line)
        }
    }

    // MARK: Helpers

    /// This process's resident memory in bytes (/proc/self/statm).
    static func residentBytes() -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
        let pages = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return pages * sysconf(Int32(_SC_PAGESIZE))
    }

    /// The children of this process named `command` (any, for nil) that still run or await
    /// reaping, as `PID COMMAND`.
    static func leftoverChildren(command wanted: String? = "rclone") -> [String] {
        let me = getpid()
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> String? in
            guard Int32(entry) != nil, let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { return nil }
            let command = stat[stat.index(after: open)..<close]
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard wanted.map({ command == $0 }) ?? true, fields.count > 1, Int32(fields[1]) == me else { return nil }
            return "\(entry) \(command)"
        }
    }
}
