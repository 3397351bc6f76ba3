import Foundation
import KeepsakeHashing
import KeepsakeStorage
import KeepsakeSupport

/// An object being uploaded to S3 while it is produced: a multipart upload is started at
/// once (so a store in progress is visible to the next run's clean-up even if this process
/// is killed), bytes fill a part, and a full part is handed to a worker and uploaded (up to
/// `uploadWorkers` at once) while the next fills. Memory stays at most `uploadWorkers + 1`
/// parts whatever the object's size. Nothing is visible until `commit` completes the upload
/// (an empty object is PUT instead: S3 refuses an upload without bytes); `abort` aborts it
/// so no part is left behind.
///
/// Every part carries `x-amz-checksum-sha256`, which the server checks against what
/// arrived: a part damaged on the way is refused, and retried.
final class S3PendingObject: PendingObject {
    // MARK: Types

    /// What a worker reports of one part: its ETag, or why it could not be uploaded.
    private enum PartOutcome: Sendable {
        case uploaded(number: Int, etag: String)
        case failed(String, interrupted: Bool)
    }

    // MARK: State

    private let backend: S3Backend
    private let name: String
    private let key: String
    private var part: [UInt8] = []
    private var partNumber = 0
    private var uploadID: String?
    private var etags: [(number: Int, etag: String)] = []
    private let workers: OrderedWorkPool<PartOutcome>
    private var failure: Error?
    private var finished = false
    private(set) var bytesWritten: Int64 = 0

    /// Starts the upload of `name`.
    init(backend: S3Backend, name: String) throws {
        self.backend = backend
        self.name = name
        key = backend.key(name)
        workers = OrderedWorkPool(capacity: backend.uploadWorkers)
        part.reserveCapacity(backend.partSize)
        uploadID = try startUpload()
    }

    deinit { abort() }

    // MARK: Writing

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard !finished else { throw StorageError.io(name: name, operation: "write", reason: "already finished") }
        if let failure { throw failure }
        var rest = bytes[...]
        while !rest.isEmpty {
            let room = currentPartSize - part.count
            let taken = rest.prefix(room)
            part.append(contentsOf: taken)
            rest = rest.dropFirst(taken.count)
            bytesWritten += Int64(taken.count)
            if part.count == currentPartSize { try sendPart() }
        }
    }

    /// Parts grow with the object, so that S3's limit of 10,000 parts is never reached:
    /// the part size doubles every 1,000 parts (8 MiB parts carry the first 8 GB).
    private var currentPartSize: Int {
        backend.partSize << min(10, partNumber / 1000)
    }

    /// Starts the multipart upload when needed and hands the full part to a worker, first
    /// waiting for one when all are busy.
    private func sendPart() throws {
        guard let uploadID else { throw StorageError.io(name: name, operation: "write", reason: "the upload was aborted") }
        while workers.isFull { try collect(workers.take()) }
        partNumber += 1
        let number = partNumber
        let bytes = part
        part = []
        part.reserveCapacity(currentPartSize)
        let pool = backend.pool
        let key = self.key
        workers.submit {
            S3PendingObject.upload(bytes, number: number, uploadID: uploadID, key: key, pool: pool)
        }
        // Results that are in already are taken now: a failure stops the writing early.
        while let ready = workers.takeIfReady() { try collect(ready) }
    }

    private func collect(_ outcome: PartOutcome?) throws {
        switch outcome {
        case .uploaded(let number, let etag)?:
            etags.append((number, etag))
        case .failed(let message, let interrupted)?:
            let error: Error = interrupted ? Interruption()
                : StorageError.io(name: backend.location + "/" + name, operation: "upload", reason: message)
            failure = failure ?? error
            throw error
        case nil:
            break
        }
    }

    /// Uploads one part on a worker thread.
    private static func upload(_ bytes: [UInt8], number: Int, uploadID: String, key: String, pool: S3ClientPool) -> PartOutcome {
        do {
            let hash = SHA256Hasher.digest(of: bytes)
            let response = try pool.withClient { client in
                try client.send(.init(method: .put, key: key, query: [("partNumber", String(number)), ("uploadId", uploadID)],
                                      headers: [("x-amz-checksum-sha256", Data(hash).base64EncodedString())],
                                      body: bytes, bodyHash: HexEncoding.encode(hash), operation: "upload part \(number) of"))
            }
            guard let etag = response.value(forHeader: "ETag") else {
                return .failed("the server gave part \(number) no ETag", interrupted: false)
            }
            return .uploaded(number: number, etag: etag)
        } catch is Interruption {
            return .failed("interrupted", interrupted: true)
        } catch {
            return .failed("\(error)", interrupted: false)
        }
    }

    private func startUpload() throws -> String {
        let response = try backend.pool.withClient { client in
            try client.send(.init(method: .post, key: key, query: [("uploads", "")], operation: "start the upload of"))
        }
        guard let id = S3XML(response.body).root.text(of: "UploadId"), !id.isEmpty else {
            throw S3Error.unexpected(reason: "no UploadId in the answer", operation: "start the upload of",
                                     endpoint: backend.configuration.endpoint, bucket: backend.bucket, key: key)
        }
        return id
    }

    // MARK: Committing

    func commit() throws {
        guard !finished else { return }
        if let failure { throw failure }
        do {
            if bytesWritten == 0 {
                abortUpload()
                try putWhole()
            } else {
                if !part.isEmpty { try sendPart() }
                while workers.outstanding > 0 { try collect(workers.take()) }
                try completeUpload()
            }
            finished = true
        } catch {
            abort()
            throw error
        }
    }

    /// An empty object goes up in one PUT.
    private func putWhole() throws {
        let hash = SHA256Hasher.digest(of: part)
        let bytes = part
        _ = try backend.pool.withClient { client in
            try client.send(.init(method: .put, key: key, headers: [("x-amz-checksum-sha256", Data(hash).base64EncodedString())],
                                  body: bytes, bodyHash: HexEncoding.encode(hash), operation: "store"))
        }
        part = []
    }

    private func completeUpload() throws {
        guard let uploadID else { return }
        var document = "<CompleteMultipartUpload>"
        for entry in etags.sorted(by: { $0.number < $1.number }) {
            document += "<Part><PartNumber>\(entry.number)</PartNumber><ETag>\(S3PendingObject.escaped(entry.etag))</ETag></Part>"
        }
        document += "</CompleteMultipartUpload>"
        let body = Array(document.utf8)
        _ = try backend.pool.withClient { client in
            try client.send(.init(method: .post, key: key, query: [("uploadId", uploadID)], body: body, operation: "complete the upload of",
                                  mayFailAfter200: true))
        }
        self.uploadID = nil
    }

    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    // MARK: Aborting

    func abort() {
        guard !finished else { return }
        finished = true
        // Let the workers finish their requests before the upload is aborted under them.
        while workers.outstanding > 0 { _ = workers.take() }
        part = []
        abortUpload()
    }

    /// Aborts the multipart upload, even once the run is interrupted.
    private func abortUpload() {
        guard let uploadID else { return }
        self.uploadID = nil
        let key = self.key
        _ = try? backend.pool.withClient { client in
            try client.send(.init(method: .delete, key: key, query: [("uploadId", uploadID)], operation: "abort the upload of",
                                  evenWhenInterrupted: true),
                            accepted: { $0 == 404 || (200..<300).contains($0) })
        }
    }
}
