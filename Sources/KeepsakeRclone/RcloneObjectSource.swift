import Foundation
import KeepsakeStorage
import KeepsakeSupport

/// A committed object on an rclone remote, read front to back through `rclone cat` (started
/// at the first read) or at any offset through `rclone cat --offset --count`. The size is
/// the one the lookup in `RcloneBackend.open` found.
final class RcloneObjectSource: RandomAccessSource {
    // MARK: State

    private let backend: RcloneBackend
    private let name: String
    private let objectSize: Int64
    /// The `cat` of the front-to-back reading, once started; nil after its end.
    private var stream: ChildProcess?
    private var streamEnded = false
    /// What ended the front-to-back reading early: thrown again by later reads, which must
    /// not look like the end of the object.
    private var streamFailure: Error?
    private var closed = false

    /// The object `name` of `backend`, `size` bytes long.
    init(backend: RcloneBackend, name: String, size: Int64) {
        self.backend = backend
        self.name = name
        objectSize = size
    }

    deinit { close() }

    // MARK: ByteSource

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try checkOpen()
        if let streamFailure { throw streamFailure }
        guard !streamEnded, buffer.count > 0 else { return 0 }
        let process: ChildProcess
        if let stream {
            process = stream
        } else {
            process = try backend.runner.start("cat", paths: [backend.objectPath(name)], output: .pipe)
            stream = process
        }
        do {
            let count = try process.read(into: buffer)
            if count > 0 { return count }
            streamEnded = true
            stream = nil
            try process.finish()
        } catch {
            stream = nil
            let failure = backend.failure(of: process, after: error, operation: "read", name: name)
            streamFailure = failure
            throw failure
        }
        let outcome = RcloneRunner.Outcome(of: process)
        guard outcome.succeeded else {
            let failure = backend.failure(outcome, operation: "read", name: name)
            streamFailure = failure
            throw failure
        }
        return 0
    }

    func close() {
        closed = true
        stream?.terminate()
        stream = nil
    }

    // MARK: RandomAccessSource

    func size() throws -> Int64 {
        try checkOpen()
        return objectSize
    }

    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try checkOpen()
        guard offset >= 0 else {
            throw StorageError.io(name: backend.displayName(name), operation: "read", reason: "negative offset \(offset)")
        }
        // rclone cannot be asked for 0 bytes (`--count 0` means all), nor past the end.
        guard buffer.count > 0, offset < objectSize else { return 0 }
        let count = Int(min(Int64(buffer.count), objectSize - offset))
        let process = try backend.runner.start("cat", options: ["--offset", String(offset), "--count", String(count)],
                                               paths: [backend.objectPath(name)], output: .pipe)
        let got: Int
        do {
            got = try process.readFully(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]))
            try process.finish()
        } catch {
            throw backend.failure(of: process, after: error, operation: "read", name: name)
        }
        let outcome = RcloneRunner.Outcome(of: process)
        guard outcome.succeeded else { throw backend.failure(outcome, operation: "read", name: name) }
        return got
    }

    // MARK: Helpers

    private func checkOpen() throws {
        guard !closed else { throw StorageError.io(name: backend.displayName(name), operation: "read", reason: "closed") }
    }
}
