import Foundation
import KeepsakeModel
import KeepsakeStorage
import KeepsakeSupport

/// A destination under a prefix of an S3-compatible bucket (`s3://BUCKET/PREFIX`): each
/// stored object is one S3 object `PREFIX/NAME`, so the bucket holds the same files a local
/// destination does and `aws s3 cp s3://BUCKET/PREFIX/HOST_ID.tar.zst - | tar --zstd -x`
/// restores without Keepsake.
///
/// - Writes stream: an object is sent in parts as they fill (several at once, memory
///   bounded by `S3PendingObject`), each part with its SHA-256 for the server to check, and
///   becomes visible only when the upload is completed on commit; an aborted one leaves
///   nothing, and an interrupted one is removed by the next run (`removeLeftovers`).
/// - Reads are ranged GETs: a partial restore fetches only the frames it needs.
/// - The lock is the object `PREFIX/keepsake.lock`, created and replaced with conditional
///   writes (`If-None-Match: *`, `If-Match: ETAG`), so of several runs exactly one holds it;
///   its holder refreshes it, and one not refreshed for its TTL is stale (`S3Lock`).
public final class S3Backend: WritableStorage {
    // MARK: Constants

    static let lockName = "keepsake.lock"

    // MARK: State

    public let bucket: String
    /// The key prefix, without slashes at either end (empty for the whole bucket).
    public let prefix: String
    let configuration: S3Configuration
    let pool: S3ClientPool
    let cancellation: CancellationFlag?
    /// Part size and parts in flight of uploads (tests make them small).
    var partSize = 8 << 20
    var uploadWorkers = 4
    /// How long the lock lives without a refresh (see `S3Lock`).
    let lockTimeToLive: TimeInterval

    public var location: String { prefix.isEmpty ? "s3://\(bucket)" : "s3://\(bucket)/\(prefix)" }
    public let memo: ObjectMemo? = ObjectMemo()

    /// The destination `s3://bucket/prefix` reached with `configuration`.
    public init(bucket: String, prefix: String, configuration: S3Configuration, environment: [String: String] = [:],
                cancellation: CancellationFlag? = nil) throws {
        self.bucket = bucket
        self.prefix = prefix
        self.configuration = configuration
        self.cancellation = cancellation
        let client = try S3Client(configuration: configuration, bucket: bucket, retry: .standard(environment: environment),
                                  cancellation: cancellation)
        pool = S3ClientPool(client)
        lockTimeToLive = S3Lock.timeToLive(environment: environment)
    }

    /// How an unfinished upload is named among leftovers: `upload:NAME:UPLOADID`.
    static func uploadRawName(_ name: String, uploadID: String) -> String { "upload:\(name):\(uploadID)" }

    /// The key of the object `name`.
    func key(_ name: String) -> String { prefix.isEmpty ? name : prefix + "/" + name }

    // MARK: WritableStorage

    public func prepare() throws {
        // The bucket must exist: a typo must not start a new one somewhere.
        do {
            _ = try pool.withClient { client in
                try client.send(.init(method: .head, key: "", operation: "use"))
            }
        } catch S3Error.server(404, _, _, let operation, let endpoint, _, _) {
            // A HEAD has no error document to say so.
            throw S3Error.server(status: 404, code: "NoSuchBucket", message: "", operation: operation, endpoint: endpoint,
                                 bucket: bucket, key: "")
        }
    }

    public func list() throws -> [StoredObject] {
        try listKeys().compactMap { entry in
            guard !entry.name.hasPrefix("."), entry.name != S3Backend.lockName else { return nil }
            return StoredObject(name: entry.name, size: entry.size)
        }.sorted { $0.name < $1.name }
    }

    /// The most pages one listing reads, and the most objects it returns: far beyond any
    /// destination (a thousand keys a page), and a bound on what a server that never stops
    /// answering `IsTruncated` can cost.
    static let listingPageLimit = 10_000
    static let listingEntryLimit = 1_000_000

    /// Every object directly under the prefix (not in deeper "folders"), the lock included.
    /// - Throws: `StorageError.unusable` when the server's listing does not end: a token
    ///   given twice, or more pages or objects than any destination holds.
    func listKeys() throws -> [(name: String, size: Int64)] {
        let listed = prefix.isEmpty ? "" : prefix + "/"
        var entries: [(name: String, size: Int64)] = []
        var token: String?
        var seen = Set<String>()
        var pages = 0
        repeat {
            pages += 1
            if let token, !seen.insert(token).inserted {
                throw endlessListing("it gave the continuation token '\(token.prefix(40))' twice")
            }
            guard pages <= S3Backend.listingPageLimit, entries.count <= S3Backend.listingEntryLimit else {
                throw endlessListing("it went on past \(S3Backend.listingPageLimit) pages or \(S3Backend.listingEntryLimit) objects")
            }
            var query: [(name: String, value: String)] = [("list-type", "2"), ("prefix", listed), ("delimiter", "/")]
            if let token { query.append(("continuation-token", token)) }
            let response = try pool.withClient { client in
                try client.send(.init(method: .get, key: "", query: query, operation: "list"))
            }
            let document = S3XML(response.body).root
            for item in document.children("Contents") {
                guard let key = item.text(of: "Key"), key.hasPrefix(listed), let size = item.text(of: "Size").flatMap(Int64.init)
                else { continue }
                let name = String(key.dropFirst(listed.count))
                if !name.isEmpty && !name.contains("/") { entries.append((name, size)) }
            }
            token = document.text(of: "IsTruncated") == "true" ? document.text(of: "NextContinuationToken") : nil
            try cancellation?.check()
        } while token != nil
        return entries
    }

    /// A listing the server would not end, named with why.
    private func endlessListing(_ why: String) -> StorageError {
        .unusable(destination: location, reason: "the server's listing does not end (\(why)); Keepsake stopped reading it. "
            + "Check the endpoint: an S3 server ends every listing")
    }

    public func create(_ name: String) throws -> PendingObject {
        try StoredObject.checkName(name)
        // An object of this name is to be written: what it held no longer holds.
        memo?.forget(name)
        return try S3PendingObject(backend: self, name: name)
    }

    public func open(_ name: String) throws -> RandomAccessSource {
        try StoredObject.checkName(name)
        return try S3ObjectReader(backend: self, name: name)
    }

    public func delete(_ name: String) throws {
        try StoredObject.checkName(name)
        memo?.forget(name)
        _ = try pool.withClient { client in
            try client.send(.init(method: .delete, key: key(name), operation: "delete"), accepted: { $0 == 404 || (200..<300).contains($0) })
        }
    }

    public func move(_ name: String, to newName: String) throws {
        try StoredObject.checkName(name)
        try StoredObject.checkName(newName)
        memo?.forget(newName)
        // S3 has no rename: copy on the server, then delete the original.
        let source = "/" + bucket + "/" + SigV4URIEncoding.encode(Array(key(name).utf8), keepingSlash: true)
        do {
            _ = try pool.withClient { client in
                try client.send(.init(method: .put, key: key(newName), headers: [("x-amz-copy-source", source)],
                                      operation: "copy \(name) to", mayFailAfter200: true))
            }
        } catch S3Error.server(404, _, _, _, _, _, _) {
            throw StorageError.notFound(name: name, destination: location)
        }
        try delete(name)
    }

    public func acquireLock(_ owner: LockOwner) throws -> DestinationLock {
        try S3Lock.acquire(owner, in: self)
    }

    /// Whether an upload's object name is one Keepsake uploads in parts: `HOST_ID` and an
    /// archive's or a manifest's ending, a backup's or a supplement's.
    static func isKeepsakeUpload(_ name: String) -> Bool {
        if SupplementNaming.parts(ofArchiveName: name) != nil || SupplementNaming.parts(ofManifestName: name) != nil { return true }
        guard let stem = BackupNaming.stem(of: name), !BackupNaming.isSideObject(name) else { return false }
        return BackupNaming.parts(ofStem: Substring(stem)) != nil
    }

    /// Multipart uploads under the prefix that were never completed (a run killed while
    /// storing): aborted, so their parts stop taking space; returned as
    /// `upload:NAME:UPLOADID`. Called under the lock, so no other run is uploading.
    public func removeLeftovers() throws -> [String] {
        let listed = prefix.isEmpty ? "" : prefix + "/"
        var removed: [String] = []
        var markers: (key: String, upload: String)?
        var seen = Set<String>()
        var pages = 0
        repeat {
            pages += 1
            if let markers, !seen.insert(markers.key + "\n" + markers.upload).inserted {
                throw endlessListing("it gave the markers of the unfinished uploads '\(markers.key.prefix(40))' twice")
            }
            guard pages <= S3Backend.listingPageLimit else {
                throw endlessListing("its unfinished uploads went on past \(S3Backend.listingPageLimit) pages")
            }
            var query: [(name: String, value: String)] = [("uploads", ""), ("prefix", listed)]
            if let markers { query += [("key-marker", markers.key), ("upload-id-marker", markers.upload)] }
            let response = try pool.withClient { client in
                try client.send(.init(method: .get, key: "", query: query, operation: "list the unfinished uploads in"))
            }
            let document = S3XML(response.body).root
            for upload in document.children("Upload") {
                guard let key = upload.text(of: "Key"), let id = upload.text(of: "UploadId"), key.hasPrefix(listed) else { continue }
                let name = String(key.dropFirst(listed.count))
                // Only Keepsake's own (an archive or a manifest of a backup): another program's
                // uploads under the prefix are not this run's to abort.
                guard !name.contains("/"), S3Backend.isKeepsakeUpload(name), !removed.contains(S3Backend.uploadRawName(name, uploadID: id))
                else { continue }
                _ = try pool.withClient { client in
                    try client.send(.init(method: .delete, key: key, query: [("uploadId", id)], operation: "abort the upload of"),
                                    accepted: { $0 == 404 || (200..<300).contains($0) })
                }
                removed.append(S3Backend.uploadRawName(name, uploadID: id))
            }
            if document.text(of: "IsTruncated") == "true", let key = document.text(of: "NextKeyMarker"),
               let upload = document.text(of: "NextUploadIdMarker") {
                markers = (key, upload)
            } else {
                markers = nil
            }
        } while markers != nil
        return removed
    }
}
