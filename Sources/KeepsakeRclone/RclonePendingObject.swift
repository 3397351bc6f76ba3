import Foundation
import KeepsakeStorage

/// An object being stored on an rclone remote: `rclone rcat` reads it from a pipe into a
/// temporary object as it is written (the pipe is all that is buffered); `commit` ends the
/// input, waits for rcat, checks the temporary holds every byte and renames it onto the name.
final class RclonePendingObject: PendingObject {
    // MARK: State

    private let backend: RcloneBackend
    /// The running rcat; nil once finished.
    private var upload: ChildProcess?
    private let temporaryName: String
    private let finalName: String
    private(set) var bytesWritten: Int64 = 0
    private var finished = false

    /// Takes over `upload`, the rcat writing `temporaryName` in `backend`, for the object `finalName`.
    init(backend: RcloneBackend, upload: ChildProcess, temporaryName: String, finalName: String) {
        self.backend = backend
        self.upload = upload
        self.temporaryName = temporaryName
        self.finalName = finalName
    }

    deinit { abort() }

    // MARK: PendingObject

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard !finished, let upload else {
            throw StorageError.io(name: backend.displayName(finalName), operation: "write", reason: "already finished")
        }
        do {
            try upload.write(bytes)
        } catch {
            // rcat ended (or the run was cancelled): its own words say why.
            let failure = backend.failure(of: upload, after: error, operation: "store", name: finalName)
            abort()
            throw failure
        }
        bytesWritten += Int64(bytes.count)
    }

    func commit() throws {
        guard !finished, let upload else { return }
        finished = true
        self.upload = nil
        do {
            try complete(upload)
        } catch {
            removeTemporary()
            throw error
        }
    }

    func abort() {
        guard !finished else { return }
        finished = true
        upload?.terminate()
        upload = nil
        removeTemporary()
    }

    // MARK: Helpers

    /// Ends rcat's input and makes the temporary the object.
    private func complete(_ upload: ChildProcess) throws {
        do {
            try upload.finish()
        } catch {
            throw backend.failure(of: upload, after: error, operation: "store", name: finalName)
        }
        let outcome = RcloneRunner.Outcome(of: upload)
        guard outcome.succeeded else { throw backend.failure(outcome, operation: "store", name: finalName) }
        // The rename replaces an older object of the name: only a complete one may do that.
        let stored = try backend.entry(temporaryName)
        guard let stored, stored.size == bytesWritten else {
            throw StorageError.io(name: backend.displayName(finalName), operation: "store", reason: "rclone stored "
                + (stored.map { "\($0.size)" } ?? "nothing") + " of its \(bytesWritten) bytes")
        }
        try backend.rename(temporaryName, to: finalName)
    }

    /// Deletes the temporary, whatever happened (not cancellable: this is the clean-up).
    private func removeTemporary() {
        guard let path = try? backend.objectPath(temporaryName) else { return }
        backend.forgetListing()
        _ = try? backend.runner.run("deletefile", paths: [path], cancellable: false)
    }
}
