import Foundation
@testable import KeepsakeStorage
import KeepsakeSupport
import XCTest

@testable import BackupCore

// MARK: - The suite

/// Checks any `WritableStorage` against the protocol's promises. A backend's test class
/// builds one with a factory for fresh, empty (not yet prepared) destinations and a few
/// hooks for what only the backend itself can do (plant a lock or a leftover the way a
/// crashed run would, and list what is physically stored, temporaries included). Then it
/// calls `run()`, or `run(.storing)` and the other groups from test methods of their own: the
/// checks are reached only that way, so every backend passes every one of them.
struct StorageConformanceSuite {
    // MARK: Configuration

    /// A fresh, empty destination (not yet prepared).
    let makeBackend: () throws -> WritableStorage
    /// Every name physically present, including temporaries and the lock.
    let rawNames: (WritableStorage) throws -> [String]
    /// Places a lock record for `owner` as another run would have left it.
    let plantLock: (WritableStorage, LockOwner) throws -> Void
    /// Places what an interrupted store leaves behind; returns its raw name.
    let plantLeftover: (WritableStorage) throws -> String
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

    private func prepared() throws -> WritableStorage {
        let backend = try makeBackend()
        try backend.prepare()
        return backend
    }

    @discardableResult
    private func store(_ bytes: [UInt8], as name: String, in backend: WritableStorage) throws -> PendingObject {
        let pending = try backend.create(name)
        try bytes.withUnsafeBytes { try pending.write($0) }
        try pending.commit()
        return pending
    }

    private func pattern(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
        // Through a buffer pointer: a closure call per byte takes seconds for 21 MiB in a debug
        // build, and many more under ASan.
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var index = 0
            while index < count {
                buffer[index] = UInt8(truncatingIfNeeded: index &* 31 &+ Int(seed) &+ (index >> 11))
                index += 1
            }
            initialized = count
        }
    }

    // MARK: Checks

    private func checkPrepareIsIdempotentAndStartsEmpty(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try makeBackend()
        try backend.prepare()
        try backend.prepare()
        XCTAssertEqual(try backend.list(), [], file: file, line: line)
        XCTAssertFalse(backend.location.isEmpty, file: file, line: line)
    }

    private func checkCommitMakesObjectVisibleWithItsSize(file: StaticString = #filePath, line: UInt = #line) throws {
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

    private func checkEmptyObject(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        try store([], as: "empty", in: backend)
        XCTAssertEqual(try backend.list(), [StoredObject(name: "empty", size: 0)], file: file, line: line)
        XCTAssertEqual(try backend.readObject("empty"), [], file: file, line: line)
    }

    private func checkListIsSortedAndCommitReplaces(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        try store(pattern(10), as: "b", in: backend)
        try store(pattern(20), as: "a.manifest.jsonl", in: backend)
        try store(pattern(30), as: "c_x.tar.zst", in: backend)
        try store(pattern(5, seed: 1), as: "b", in: backend)
        XCTAssertEqual(try backend.list(), [StoredObject(name: "a.manifest.jsonl", size: 20), StoredObject(name: "b", size: 5),
                                            StoredObject(name: "c_x.tar.zst", size: 30)], file: file, line: line)
        XCTAssertEqual(try backend.readObject("b"), pattern(5, seed: 1), file: file, line: line)
    }

    private func checkAbortLeavesNothing(file: StaticString = #filePath, line: UInt = #line) throws {
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

    private func checkListNeverShowsTemporariesOrTheLock(file: StaticString = #filePath, line: UInt = #line) throws {
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

    private func checkOpenReadsTheBytesInChunks(file: StaticString = #filePath, line: UInt = #line) throws {
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
        assertSameBytes(try backend.readObject("data")[...], bytes[...], "read back", file: file, line: line)
        XCTAssertThrowsError(try backend.readObject("data", limit: 1000), file: file, line: line) { error in
            XCTAssertEqual(error as? ByteStreamError, .tooLarge(limit: 1000), file: file, line: line)
        }
    }

    /// `open` reads at any offset too (a partial restore fetches only its frames): reads
    /// inside, across and at the end of the object, past its end, and its size.
    private func checkRangedReads(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        let bytes = pattern(3 << 20 + 123, seed: 5)
        try store(bytes, as: "ranged", in: backend)
        let source = try backend.open("ranged")
        defer { source.close() }
        XCTAssertEqual(try source.size(), Int64(bytes.count), file: file, line: line)
        for (offset, count) in [(0, 1), (1, 4095), (1 << 20, 1 << 20), (bytes.count - 10, 10), (bytes.count - 10, 100),
                                (bytes.count, 5), (bytes.count + 100, 5), (777_777, 2_000_000)] {
            let got = try source.bytes(at: Int64(offset), count: count)
            let end = min(bytes.count, offset + count)
            let want = offset < bytes.count ? Array(bytes[offset..<end]) : []
            XCTAssertEqual(got, want, "\(count) bytes at \(offset)", file: file, line: line)
        }
        // Ranged reads leave the front-to-back reading where it was.
        var chunk = [UInt8](repeating: 0, count: 100)
        let count = try chunk.withUnsafeMutableBytes { try source.read(into: $0) }
        XCTAssertEqual(Array(chunk[0..<count]), Array(bytes[0..<count]), file: file, line: line)
        XCTAssertGreaterThan(count, 0, file: file, line: line)
    }

    /// An object of many MiB written in pieces of every size (small ones buffered, big ones
    /// written through, writeback started on the way) reads back whole after commit.
    private func checkBigObjectWrittenInPiecesOfEverySize(file: StaticString = #filePath, line: UInt = #line) throws {
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
        assertSameBytes(try backend.readObject("big")[...], bytes[...], "read back", file: file, line: line)
    }

    private func checkDelete(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        try store(pattern(4), as: "x", in: backend)
        try store(pattern(4), as: "y", in: backend)
        try backend.delete("x")
        XCTAssertEqual(try backend.list().map(\.name), ["y"], file: file, line: line)
        XCTAssertThrowsError(try backend.open("x"), file: file, line: line)
    }

    private func checkMoveRenamesAndReplaces(file: StaticString = #filePath, line: UInt = #line) throws {
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

    private func checkMissingObjectsAreNotFound(file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try prepared()
        for attempt in [{ _ = try backend.open("missing") }, { _ = try backend.readObject("missing") }] {
            XCTAssertThrowsError(try attempt(), file: file, line: line) { error in
                XCTAssertEqual(error as? StorageError, .notFound(name: "missing", destination: backend.location),
                               file: file, line: line)
            }
        }
    }

    private func checkBadObjectNamesAreRefused(file: StaticString = #filePath, line: UInt = #line) throws {
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

    private func checkSecondLockIsRefusedNamingTheHolder(file: StaticString = #filePath, line: UInt = #line) throws {
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

    private func checkReleaseThenAcquireWorks(file: StaticString = #filePath, line: UInt = #line) throws {
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

    private func checkStaleLockIsTakenOver(file: StaticString = #filePath, line: UInt = #line) throws {
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

    private func checkLockOfAnotherHostIsNotTakenOver(file: StaticString = #filePath, line: UInt = #line) throws {
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

    private func checkRemoveLeftovers(file: StaticString = #filePath, line: UInt = #line) throws {
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

    // MARK: The one entry point

    /// What the checks are about; a backend's test class runs each group from a test method of
    /// its own (or all of them from one).
    enum Group: CaseIterable {
        case storing, reading, names, locking
    }

    /// Every check, in the order they run.
    enum Check: String, CaseIterable {
        case prepareIsIdempotentAndStartsEmpty, commitMakesObjectVisibleWithItsSize, emptyObject,
             listIsSortedAndCommitReplaces, abortLeavesNothing, bigObjectWrittenInPiecesOfEverySize
        case listNeverShowsTemporariesOrTheLock, openReadsTheBytesInChunks, rangedReads, missingObjectsAreNotFound
        case delete, moveRenamesAndReplaces, badObjectNamesAreRefused, removeLeftovers
        case secondLockIsRefusedNamingTheHolder, releaseThenAcquireWorks, staleLockIsTakenOver,
             lockOfAnotherHostIsNotTakenOver

        /// The group the check belongs to.
        var group: Group {
            switch self {
            case .prepareIsIdempotentAndStartsEmpty, .commitMakesObjectVisibleWithItsSize, .emptyObject,
                 .listIsSortedAndCommitReplaces, .abortLeavesNothing, .bigObjectWrittenInPiecesOfEverySize:
                return .storing
            case .listNeverShowsTemporariesOrTheLock, .openReadsTheBytesInChunks, .rangedReads, .missingObjectsAreNotFound:
                return .reading
            case .delete, .moveRenamesAndReplaces, .badObjectNamesAreRefused, .removeLeftovers:
                return .names
            case .secondLockIsRefusedNamingTheHolder, .releaseThenAcquireWorks, .staleLockIsTakenOver,
                 .lockOfAnotherHostIsNotTakenOver:
                return .locking
            }
        }
    }

    /// Runs every check of `groups` (all of them by default), in order, going on after one
    /// fails: the only way a backend's tests run the suite, so none can leave a check out.
    /// A failure points at the check's line below; one that throws is named.
    func run(_ groups: Group...) {
        let wanted = groups.isEmpty ? Group.allCases : groups
        for check in Check.allCases where wanted.contains(check.group) {
            do {
                try perform(check)
            } catch {
                XCTFail("storage conformance check '\(check.rawValue)' threw: \(error)")
            }
        }
    }

    private func perform(_ check: Check) throws {
        switch check {
        case .prepareIsIdempotentAndStartsEmpty: try checkPrepareIsIdempotentAndStartsEmpty()
        case .commitMakesObjectVisibleWithItsSize: try checkCommitMakesObjectVisibleWithItsSize()
        case .emptyObject: try checkEmptyObject()
        case .listIsSortedAndCommitReplaces: try checkListIsSortedAndCommitReplaces()
        case .abortLeavesNothing: try checkAbortLeavesNothing()
        case .bigObjectWrittenInPiecesOfEverySize: try checkBigObjectWrittenInPiecesOfEverySize()
        case .listNeverShowsTemporariesOrTheLock: try checkListNeverShowsTemporariesOrTheLock()
        case .openReadsTheBytesInChunks: try checkOpenReadsTheBytesInChunks()
        case .rangedReads: try checkRangedReads()
        case .missingObjectsAreNotFound: try checkMissingObjectsAreNotFound()
        case .delete: try checkDelete()
        case .moveRenamesAndReplaces: try checkMoveRenamesAndReplaces()
        case .badObjectNamesAreRefused: try checkBadObjectNamesAreRefused()
        case .removeLeftovers: try checkRemoveLeftovers()
        case .secondLockIsRefusedNamingTheHolder: try checkSecondLockIsRefusedNamingTheHolder()
        case .releaseThenAcquireWorks: try checkReleaseThenAcquireWorks()
        case .staleLockIsTakenOver: try checkStaleLockIsTakenOver()
        case .lockOfAnotherHostIsNotTakenOver: try checkLockOfAnotherHostIsNotTakenOver()
        }
    }
}
