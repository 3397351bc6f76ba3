import Foundation
import KeepsakeHashing
import KeepsakeJSON
@testable import KeepsakeStorage
@testable import KeepsakeS3
import KeepsakeSupport
import KeepsakeTestSupport
import XCTest

@testable import BackupCore

/// The S3 backend against the conformance suite, on a real SeaweedFS (`weed mini` on
/// loopback, started once for the class), and what only S3 promises: conditional locks with
/// one winner, a TTL judged by the store's clock, parts checked by their SHA-256, uploads
/// aborted on interruption, and clear errors for a missing bucket or a wrong secret.
// test-tag(threads): parts uploaded by a pool, read-ahead, the lock's refreshing thread, threads racing for one lock
final class S3ConformanceTests: KeepsakeTestCase {
    // MARK: The server

    /// One server for the whole class (it takes seconds to start and stop).
    nonisolated(unsafe) private static var server: SeaweedServer?
    nonisolated(unsafe) private static var startFailure: String?
    private static let bucket = "keepsake-conformance"
    private var counter = 0
    private var run = String(UInt32.random(in: 0...UInt32.max), radix: 16)

    override class func setUp() {
        super.setUp()
        do {
            server = try SeaweedServer(buckets: [bucket])
        } catch {
            startFailure = "\(error)"
        }
    }

    override class func tearDown() {
        server?.stop()
        server = nil
        super.tearDown()
    }

    private func running() throws -> SeaweedServer {
        guard let server = Self.server else {
            throw XCTSkip("SeaweedFS did not start (run Scripts/test-servers): \(Self.startFailure ?? "unknown")")
        }
        return server
    }

    /// A configuration for the test server.
    private func configuration(secret: String? = nil) throws -> S3Configuration {
        let server = try running()
        return S3Configuration(endpoint: server.endpoint.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/")),
                               region: server.region, pathStyle: true,
                               credentials: S3Credentials(accessKeyID: server.accessKey, secretAccessKey: secret ?? server.secretKey),
                               credentialSource: "the test")
    }

    /// A fresh destination under its own prefix, with parts of S3's smallest size (5 MiB),
    /// so the suite's bigger objects go up in several parts.
    private func makeBackend(prefix: String? = nil, environment: [String: String] = [:]) throws -> S3Backend {
        counter += 1
        let backend = try S3Backend(bucket: Self.bucket, prefix: prefix ?? "suite-\(run)/dest-\(counter)",
                                    configuration: try configuration(),
                                    environment: ["KEEPSAKE_S3_MAX_ATTEMPTS": "3"].merging(environment) { $1 })
        backend.partSize = 5 << 20
        return backend
    }

    /// Every name under the prefix (the lock included) and each unfinished upload.
    private func rawNames(_ storage: WritableStorage) throws -> [String] {
        guard let backend = storage as? S3Backend else { return [] }
        let objects = try backend.listKeys().map(\.name)
        return (objects + (try unfinishedUploads(backend))).sorted()
    }

    private func unfinishedUploads(_ backend: S3Backend) throws -> [String] {
        let response = try backend.pool.withClient { client in
            try client.send(.init(method: .get, key: "", query: [("uploads", ""), ("prefix", backend.prefix + "/")],
                                  operation: "list the uploads in"))
        }
        return S3XML(response.body).root.children("Upload").compactMap { upload in
            guard let key = upload.text(of: "Key"), let id = upload.text(of: "UploadId") else { return nil }
            return S3Backend.uploadRawName(String(key.dropFirst(backend.prefix.count + 1)), uploadID: id)
        }
    }

    private func put(_ bytes: [UInt8], key: String, in backend: S3Backend, headers: [(name: String, value: String)] = []) throws {
        _ = try backend.pool.withClient { client in
            try client.send(.init(method: .put, key: key, headers: headers, body: bytes, operation: "plant"))
        }
    }

    private var suite: StorageConformanceSuite {
        StorageConformanceSuite(
            makeBackend: { [unowned self] in try makeBackend() },
            rawNames: { [unowned self] in try rawNames($0) },
            plantLock: { [unowned self] storage, owner in
                guard let backend = storage as? S3Backend else { return }
                try put(Array((owner.json.serialized() + "\n").utf8), key: backend.key(S3Backend.lockName), in: backend)
            },
            plantLeftover: { storage in
                guard let backend = storage as? S3Backend else { return "" }
                // What a killed run leaves: an upload of an archive started, a part sent, never completed.
                let name = "box_20261206T020000Z-" + String(format: "%08x", UInt32.random(in: 0...UInt32.max)) + ".tar.zst"
                let key = backend.key(name)
                let started = try backend.pool.withClient { client in
                    try client.send(.init(method: .post, key: key, query: [("uploads", "")], operation: "plant an upload of"))
                }
                let id = S3XML(started.body).root.text(of: "UploadId") ?? ""
                _ = try backend.pool.withClient { client in
                    try client.send(.init(method: .put, key: key, query: [("partNumber", "1"), ("uploadId", id)],
                                          body: Array("half an archive".utf8), operation: "plant a part of"))
                }
                return S3Backend.uploadRawName(name, uploadID: id)
            },
            isTemporaryName: { $0.hasPrefix("upload:") },
            lockName: S3Backend.lockName
        )
    }

    // MARK: Conformance
    //
    // Every check of the suite, a group per test method: a failure names the check's line.

    func testConformanceOfStoring() { suite.run(.storing) }
    func testConformanceOfReading() { suite.run(.reading) }
    func testConformanceOfNames() { suite.run(.names) }
    func testConformanceOfLocking() { suite.run(.locking) }

    // MARK: S3 specifics

    /// Twelve runs (threads, each with its own connections) race for one free lock, then for
    /// one stale lock: each time exactly one wins, and the rest are told who holds it.
    func testConcurrentLockTakingHasExactlyOneWinner() throws {
        let backend = try makeBackend()
        for stale in [false, true] {
            if stale {
                let dead = LockOwner(pid: StorageConformanceSuite.deadPID, host: HostIdentity.hostName,
                                     started: Date(timeIntervalSince1970: 1_700_000_000), operation: "backup", processStartTicks: nil)
                try put(Array(dead.json.serialized().utf8), key: backend.key(S3Backend.lockName), in: backend)
            }
            let outcomes = LockRace()
            let prefix = backend.prefix, configuration = backend.configuration
            DispatchQueue.concurrentPerform(iterations: 12) { index in
                do {
                    let contender = try S3Backend(bucket: Self.bucket, prefix: prefix, configuration: configuration)
                    let lock = try contender.acquireLock(LockOwner(pid: getpid(), host: HostIdentity.hostName, started: Date(),
                                                                   operation: "racer \(index)", processStartTicks: nil))
                    outcomes.won(lock)
                } catch LockError.held {
                    outcomes.refused()
                } catch {
                    outcomes.failed("\(error)")
                }
            }
            XCTAssertEqual(outcomes.failures, [], "stale: \(stale)")
            XCTAssertEqual(outcomes.winners.count, 1, "stale: \(stale): exactly one winner")
            XCTAssertEqual(outcomes.refusals, 11, "stale: \(stale)")
            if stale { XCTAssertNotNil(outcomes.winners.first?.tookOverFrom, "the winner took over the stale lock") }
            outcomes.winners.forEach { $0.release() }
            XCTAssertFalse(try rawNames(backend).contains(S3Backend.lockName), "released")
        }
    }

    /// A lock whose holder stopped refreshing is stale after its TTL (by the store's clock),
    /// even when its holder is on another host; the holder refreshes it meanwhile.
    func testALockNotRefreshedForItsTimeToLiveIsStale() throws {
        let environment = ["KEEPSAKE_S3_LOCK_TTL": "3"]
        let backend = try makeBackend(environment: environment)
        let holder = try backend.acquireLock(.current(operation: "backup"))
        // Refreshed every second: still held after three.
        Thread.sleep(forTimeInterval: 4)
        let rival = try makeBackend(prefix: backend.prefix, environment: environment)
        XCTAssertThrowsError(try rival.acquireLock(.current(operation: "prune"))) { XCTAssertTrue($0 is LockError, "\($0)") }
        holder.release()

        let foreign = LockOwner(pid: 1, host: "elsewhere.invalid", started: Date(), operation: "backup", processStartTicks: nil)
        guard case .object(var record) = foreign.json else { return XCTFail("a lock record is an object") }
        record["ttl_seconds"] = .int(2)
        try put(Array(JSONValue.object(record).serialized().utf8), key: backend.key(S3Backend.lockName), in: backend)
        XCTAssertThrowsError(try rival.acquireLock(.current(operation: "prune")), "fresh: respected")
        Thread.sleep(forTimeInterval: 3.5)
        let taken = try rival.acquireLock(.current(operation: "prune"))
        XCTAssertEqual(taken.tookOverFrom?.host, "elsewhere.invalid")
        taken.release()
    }

    /// A part whose bytes do not match the SHA-256 sent with it is refused by the store.
    func testThePartChecksumIsChecked() throws {
        let backend = try makeBackend()
        let body = Array("the bytes sent".utf8)
        let wrong = Data(SHA256Hasher.digest(of: Array("other bytes".utf8))).base64EncodedString()
        XCTAssertThrowsError(try put(body, key: backend.key("checked"), in: backend, headers: [("x-amz-checksum-sha256", wrong)])) {
            XCTAssertTrue("\($0)".contains("BadDigest"), "\($0)")
        }
        XCTAssertEqual(try backend.list(), [])
    }

    /// Interrupted while uploading: the upload is aborted, nothing is left, and writing says so.
    func testAnInterruptedUploadIsAbortedAndLeavesNothing() throws {
        let server = try running()
        let cancellation = CancellationFlag()
        counter += 1
        let backend = try S3Backend(bucket: Self.bucket, prefix: "suite-\(run)/dest-\(counter)", configuration: try configuration(),
                                    cancellation: cancellation)
        backend.partSize = 5 << 20
        _ = server
        let pending = try backend.create("cut.tar.zst")
        let chunk = [UInt8](repeating: 7, count: 1 << 20)
        for _ in 0..<12 { try chunk.withUnsafeBytes { try pending.write($0) } }
        cancellation.cancel()
        XCTAssertThrowsError(try (0..<20).forEach { _ in try chunk.withUnsafeBytes { try pending.write($0) } })
        pending.abort()
        // Looked at by another run: the interrupted one stops talking to the store.
        XCTAssertEqual(try rawNames(try makeBackend(prefix: backend.prefix)), [], "no object and no unfinished upload")
    }

    /// The errors people meet first: a bucket that does not exist, a wrong secret.
    func testAMissingBucketAndAWrongSecretAreNamed() throws {
        let missing = try S3Backend(bucket: "no-such-bucket-\(run)", prefix: "x", configuration: try configuration())
        XCTAssertThrowsError(try missing.prepare()) { error in
            XCTAssertTrue("\(error)".contains("no-such-bucket-\(run)") && "\(error)".contains("does not exist"), "\(error)")
        }
        let guarded = try SeaweedServer(buckets: ["guarded"], access: .enforcedWithRandomKeys())
        defer { guarded.stop() }
        let wrong = S3Configuration(endpoint: guarded.endpoint.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/")),
                                    region: guarded.region, pathStyle: true,
                                    credentials: S3Credentials(accessKeyID: guarded.accessKey, secretAccessKey: "not-the-secret"),
                                    credentialSource: "the test")
        let refused = try S3Backend(bucket: "guarded", prefix: "p", configuration: wrong)
        XCTAssertThrowsError(try refused.list()) { error in
            let message = "\(error)"
            XCTAssertTrue(message.contains("Access denied") && message.contains("s3://guarded"), message)
            XCTAssertFalse(message.contains("not-the-secret"), "no secret in messages: \(message)")
        }
        var right = wrong
        right.credentials = S3Credentials(accessKeyID: guarded.accessKey, secretAccessKey: guarded.secretKey)
        XCTAssertEqual(try S3Backend(bucket: "guarded", prefix: "p", configuration: right).list(), [])
    }
}

// MARK: - Race bookkeeping

/// What the racing threads of `testConcurrentLockTakingHasExactlyOneWinner` got.
private final class LockRace: @unchecked Sendable {
    // Guarded by `lock`: written from the racing threads.
    private let lock = NSLock()
    private(set) var winners: [DestinationLock] = []
    private(set) var refusals = 0
    private(set) var failures: [String] = []

    func won(_ held: DestinationLock) { lock.lock(); winners.append(held); lock.unlock() }
    func refused() { lock.lock(); refusals += 1; lock.unlock() }
    func failed(_ reason: String) { lock.lock(); failures.append(reason); lock.unlock() }
}
