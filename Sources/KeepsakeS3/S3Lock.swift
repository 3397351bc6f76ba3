import Foundation
import KeepsakeHTTP
import KeepsakeJSON
import KeepsakeStorage
import KeepsakeSupport

/// The lock of an S3 destination: the object `PREFIX/keepsake.lock`, holding its holder
/// (pid, host, start, operation), a random token and a time to live.
///
/// - Taking it is a PUT with `If-None-Match: *`: of many runs, the store lets exactly one
///   create it.
/// - Its holder refreshes it every third of the TTL (a PUT with `If-Match:` its ETag); a lock
///   the store has not seen written for a whole TTL (by the store's own clock: `Date` less
///   `Last-Modified`, so the hosts' clocks do not matter), or whose holder is a dead process
///   of this host, is stale.
/// - A stale lock is taken over with `If-Match:` the ETag it was judged by: if anyone else
///   replaced or refreshed it meanwhile, the store refuses, and the lock is looked at again.
/// - Releasing deletes it only while it is still this run's (`If-Match`).
final class S3Lock: DestinationLock, @unchecked Sendable {
    // MARK: Settings

    /// How long a lock lives without a refresh: 5 minutes (`KEEPSAKE_S3_LOCK_TTL`, in
    /// seconds, shortens it for tests).
    static func timeToLive(environment: [String: String]) -> TimeInterval {
        environment["KEEPSAKE_S3_LOCK_TTL"].flatMap(TimeInterval.init).map { max(1, min(86_400, $0)) } ?? 300
    }

    // MARK: State

    // `etag` and `stopped` are shared with the refreshing thread and guarded by `condition`.
    private let condition = NSCondition()
    private var etag: String
    private var stopped = false
    private var released = false
    private let backend: S3Backend
    private let owner: LockOwner
    private let token: String
    private let ttl: TimeInterval
    private let refresher: Thread?
    let tookOverFrom: LockOwner?
    /// What the holder should be told about the store (one that ignores conditional writes).
    let warnings: [String]
    /// The lock was replaced under this run (it looked stale to another run): told on release.
    private(set) var lost = false

    private init(backend: S3Backend, owner: LockOwner, token: String, etag: String, ttl: TimeInterval, tookOverFrom: LockOwner?,
                 warnings: [String] = []) {
        self.warnings = warnings
        self.backend = backend
        self.owner = owner
        self.token = token
        self.etag = etag
        self.ttl = ttl
        self.tookOverFrom = tookOverFrom
        let box = RefresherBox()
        refresher = Thread { box.lock?.refreshUntilStopped() }
        box.lock = self
        refresher?.name = "keepsake.s3-lock"
        refresher?.start()
    }

    /// Lets the refreshing thread reach the lock it was made for.
    private final class RefresherBox: @unchecked Sendable {
        weak var lock: S3Lock?
    }

    deinit { release() }

    // MARK: Taking

    /// Takes the lock of `backend` for `owner`, or throws `LockError.held` naming the holder.
    static func acquire(_ owner: LockOwner, in backend: S3Backend) throws -> S3Lock {
        let ttl = backend.lockTimeToLive
        let token = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let key = backend.key(S3Backend.lockName)
        var lastHolder: LockOwner?
        for _ in 0..<20 {
            let body = record(owner, token: token, ttl: ttl)
            let created = try backend.pool.withClient { client in
                try client.send(.init(method: .put, key: key, headers: [("If-None-Match", "*")], body: body, operation: "take the lock"),
                                accepted: { (200..<300).contains($0) || $0 == 412 || $0 == 409 })
            }
            if created.isSuccess, let etag = created.value(forHeader: "ETag") {
                // The same write again must be refused now that the lock exists. A store that
                // accepts it ignores If-None-Match: runs of several hosts are not kept apart.
                let probe = try backend.pool.withClient { client in
                    try client.send(.init(method: .put, key: key, headers: [("If-None-Match", "*")], body: body,
                                          operation: "check the lock"),
                                    accepted: { (200..<300).contains($0) || $0 == 412 || $0 == 409 })
                }
                guard probe.isSuccess else {
                    return S3Lock(backend: backend, owner: owner, token: token, etag: etag, ttl: ttl, tookOverFrom: nil)
                }
                return S3Lock(backend: backend, owner: owner, token: token, etag: probe.value(forHeader: "ETag") ?? etag, ttl: ttl,
                              tookOverFrom: nil, warnings: [ignoredConditionWarning(backend)])
            }
            // Someone holds it: who, and is it stale?
            let current = try backend.pool.withClient { client in
                try client.send(.init(method: .get, key: key, operation: "read the lock"), accepted: { (200..<300).contains($0) || $0 == 404 },
                                limit: 1 << 16)
            }
            guard current.status != 404, let currentTag = current.value(forHeader: "ETag") else { continue }
            let holder = (try? JSONParser.parse(current.body)).flatMap(LockOwner.init(json:))
            lastHolder = holder
            guard isStale(current, holder: holder, defaultTTL: ttl) else {
                throw LockError.held(by: holder ?? .unknownHolder, destination: backend.location)
            }
            let replaced = try backend.pool.withClient { client in
                try client.send(.init(method: .put, key: key, headers: [("If-Match", currentTag)], body: body, operation: "take over the lock"),
                                accepted: { (200..<300).contains($0) || $0 == 412 || $0 == 409 || $0 == 404 })
            }
            if replaced.isSuccess, let etag = replaced.value(forHeader: "ETag") {
                return S3Lock(backend: backend, owner: owner, token: token, etag: etag, ttl: ttl,
                              tookOverFrom: holder ?? .unknownHolder)
            }
            // Another run took it over first, or its holder refreshed it: look again.
        }
        throw LockError.held(by: lastHolder ?? .unknownHolder, destination: backend.location)
    }

    /// What a run is told when the store wrote the lock over itself despite `If-None-Match`.
    private static func ignoredConditionWarning(_ backend: S3Backend) -> String {
        "the S3 server of \(backend.location) ignores conditional writes (If-None-Match): its lock does not keep runs apart, "
            + "so two hosts may write at once. Run one host at a time there, or use a server that honours them"
    }

    /// A holder that is a dead process of this host, or a lock not written for its TTL.
    private static func isStale(_ response: HTTPResponse, holder: LockOwner?, defaultTTL: TimeInterval) -> Bool {
        if holder?.isStaleOnThisHost == true { return true }
        let json = try? JSONParser.parse(response.body)
        let ttl = json?["ttl_seconds"]?.int64Value.map(TimeInterval.init) ?? defaultTTL
        // The store's clock on both ends: the hosts' clocks need not agree.
        guard let written = response.value(forHeader: "Last-Modified").flatMap(Timestamp.parseHTTPDate) else {
            // No time to judge by: unreadable leftovers only go stale when nobody names them.
            return holder == nil
        }
        let now = response.value(forHeader: "Date").flatMap(Timestamp.parseHTTPDate) ?? Date()
        return now.timeIntervalSince(written) > ttl
    }

    /// The lock object's content: the holder, this run's token, the TTL.
    private static func record(_ owner: LockOwner, token: String, ttl: TimeInterval) -> [UInt8] {
        guard case .object(var object) = owner.json else { return [] }
        object["token"] = .string(token)
        object["ttl_seconds"] = .int(Int64(ttl))
        object["refreshed"] = .string(Timestamp.iso8601(Date()))
        return Array((JSONValue.object(object).serialized() + "\n").utf8)
    }

    // MARK: Refreshing

    private func refreshUntilStopped() {
        let interval = max(0.5, ttl / 3)
        while true {
            condition.lock()
            let deadline = Date().addingTimeInterval(interval)
            while !stopped && Date() < deadline { _ = condition.wait(until: deadline) }
            let done = stopped
            let tag = etag
            condition.unlock()
            if done { return }
            refresh(from: tag)
        }
    }

    private func refresh(from tag: String) {
        let key = backend.key(S3Backend.lockName)
        let body = S3Lock.record(owner, token: token, ttl: ttl)
        guard let response = try? backend.pool.withClient({ client in
            try client.send(.init(method: .put, key: key, headers: [("If-Match", tag)], body: body, operation: "refresh the lock",
                                  evenWhenInterrupted: true),
                            accepted: { (200..<300).contains($0) || $0 == 412 || $0 == 404 })
        }) else { return } // the store is unreachable: try again at the next refresh
        condition.lock()
        if response.isSuccess, let newTag = response.value(forHeader: "ETag") {
            etag = newTag
        } else {
            lost = true
            stopped = true
        }
        condition.unlock()
    }

    // MARK: Releasing

    func release() {
        condition.lock()
        guard !released else {
            condition.unlock()
            return
        }
        released = true
        stopped = true
        condition.broadcast()
        let tag = etag
        let wasLost = lost
        condition.unlock()
        guard !wasLost else { return }
        let key = backend.key(S3Backend.lockName)
        // Only while it is still ours; a store without conditional deletes is asked whether
        // the token is still ours first.
        let deleted = try? backend.pool.withClient { client in
            try client.send(.init(method: .delete, key: key, headers: [("If-Match", tag)], operation: "release the lock",
                                  evenWhenInterrupted: true),
                            accepted: { (200..<300).contains($0) || $0 == 412 || $0 == 404 || $0 == 501 || $0 == 400 })
        }
        guard let deleted, deleted.status == 501 || deleted.status == 400 else { return }
        guard let current = try? backend.pool.withClient({ client in
            try client.send(.init(method: .get, key: key, operation: "read the lock", evenWhenInterrupted: true), limit: 1 << 16)
        }), (try? JSONParser.parse(current.body))?["token"]?.stringValue == token else { return }
        _ = try? backend.pool.withClient { client in
            try client.send(.init(method: .delete, key: key, operation: "release the lock", evenWhenInterrupted: true),
                            accepted: { (200..<300).contains($0) || $0 == 404 })
        }
    }
}
