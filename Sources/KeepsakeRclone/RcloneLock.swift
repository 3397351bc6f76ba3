import KeepsakeStorage
/// A held lock on an rclone remote: the object `keepsake.lock` holding this run's token
/// (see `RcloneBackend.acquireLock`). Released only while the record still holds the token.
final class RcloneLock: DestinationLock {
    // MARK: State

    private let backend: RcloneBackend
    private let token: String
    private var released = false
    let tookOverFrom: LockOwner?

    /// The lock whose record in `backend` holds `token`.
    init(backend: RcloneBackend, token: String, tookOverFrom: LockOwner?) {
        self.backend = backend
        self.token = token
        self.tookOverFrom = tookOverFrom
    }

    deinit { release() }

    // MARK: DestinationLock

    func release() {
        guard !released else { return }
        released = true
        backend.releaseLock(token: token)
    }
}
