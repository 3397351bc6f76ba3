import Foundation
import KeepsakeHTTP
import KeepsakeStorage
import KeepsakeSupport

/// Reads an S3 object without downloading it first: front to back in ranged GETs of
/// `chunkSize`, the next ones fetched on worker threads while the current one is read, or
/// at any offset with one ranged GET (a partial restore asks for its frames only). Each
/// GET is retried on its own; a body shorter than the range asked for is retried too, so a
/// cut connection never reaches the reader as a short object.
final class S3ObjectReader: RandomAccessSource {
    // MARK: State

    private let backend: S3Backend
    private let name: String
    private let key: String
    private let objectSize: Int64
    private let chunkSize = 8 << 20
    private let readAhead: OrderedWorkPool<Chunk>
    /// The chunk being read and the position in it.
    private var current: [UInt8] = []
    private var position = 0
    /// The offset of the next chunk to ask for.
    private var nextOffset: Int64 = 0
    private var closed = false

    /// One fetched chunk, or why it could not be fetched.
    private enum Chunk: Sendable {
        case bytes([UInt8])
        case failed(String, interrupted: Bool)
    }

    /// Opens `name`: one HEAD for its size (and to say at once when it is missing).
    init(backend: S3Backend, name: String) throws {
        self.backend = backend
        self.name = name
        key = backend.key(name)
        let key = self.key
        let response: HTTPResponse
        do {
            response = try backend.pool.withClient { client in
                try client.send(.init(method: .head, key: key, operation: "read"))
            }
        } catch S3Error.server(404, _, _, _, _, _, _) {
            throw StorageError.notFound(name: name, destination: backend.location)
        }
        guard let size = response.contentLength else {
            throw S3Error.unexpected(reason: "no Content-Length", operation: "read", endpoint: backend.configuration.endpoint,
                                     bucket: backend.bucket, key: key)
        }
        objectSize = Int64(size)
        readAhead = OrderedWorkPool(capacity: 2)
    }

    deinit { close() }

    // MARK: RandomAccessSource

    func size() throws -> Int64 { objectSize }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !closed else { throw StorageError.io(name: name, operation: "read", reason: "closed") }
        guard let destination = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        while position == current.count {
            // Keep the next chunks coming while this one is read.
            while !readAhead.isFull && nextOffset < objectSize {
                let offset = nextOffset
                let count = Int(min(Int64(chunkSize), objectSize - offset))
                nextOffset += Int64(count)
                let pool = backend.pool, key = self.key, location = backend.location + "/" + name
                readAhead.submit {
                    do {
                        return .bytes(try S3ObjectReader.fetch(key: key, offset: offset, count: count, pool: pool, location: location))
                    } catch is Interruption {
                        return .failed("interrupted", interrupted: true)
                    } catch {
                        return .failed("\(error)", interrupted: false)
                    }
                }
            }
            switch readAhead.take() {
            case .bytes(let bytes)?:
                current = bytes
                position = 0
            case .failed(let reason, let interrupted)?:
                if interrupted { throw Interruption() }
                throw StorageError.io(name: backend.location + "/" + name, operation: "read", reason: reason)
            case nil:
                return 0
            }
        }
        let count = min(buffer.count, current.count - position)
        current.withUnsafeBytes { source in
            if let base = source.baseAddress { destination.copyMemory(from: base + position, byteCount: count) }
        }
        position += count
        return count
    }

    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !closed else { throw StorageError.io(name: name, operation: "read", reason: "closed") }
        guard offset >= 0, offset < objectSize, let destination = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        let count = Int(min(Int64(buffer.count), objectSize - offset))
        let bytes = try S3ObjectReader.fetch(key: key, offset: offset, count: count, pool: backend.pool,
                                             location: backend.location + "/" + name)
        bytes.withUnsafeBytes { source in
            if let base = source.baseAddress { destination.copyMemory(from: base, byteCount: bytes.count) }
        }
        return bytes.count
    }

    func close() {
        guard !closed else { return }
        closed = true
        // Requests in flight finish on their threads; their chunks are dropped.
        while readAhead.outstanding > 0 { _ = readAhead.take() }
        current = []
    }

    // MARK: Fetching

    /// `count` bytes at `offset`, asked for again when fewer arrive.
    private static func fetch(key: String, offset: Int64, count: Int, pool: S3ClientPool, location: String) throws -> [UInt8] {
        var bytes: [UInt8] = []
        for _ in 0..<3 {
            let range = "bytes=\(offset)-\(offset + Int64(count) - 1)"
            let response = try pool.withClient { client in
                try client.send(.init(method: .get, key: key, headers: [("Range", range)], operation: "read"), limit: count)
            }
            bytes = response.body
            if bytes.count == count { return bytes }
        }
        throw StorageError.io(name: location, operation: "read", reason: "the store sent \(bytes.count) of the \(count) bytes asked "
            + "for at offset \(offset) three times: the object changed or the connection keeps breaking")
    }
}
