import Dispatch
import Synchronization

/// Computes a SHA-256 on a thread of its own, so that the thread writing a restored file
/// only copies its bytes: on two cores, hashing on the restoring thread made it the
/// bottleneck. The bytes are copied into a few reusable buffers (at most `buffers` chunks
/// wait at once, so memory stays bounded however fast the caller is); `finalizeHex` waits
/// for the digest. One caller thread at a time.
final class BackgroundHasher: @unchecked Sendable {
    // MARK: State

    // `hasher` is only touched on `queue`; `spare` is shared and guarded by its mutex.
    private let queue = DispatchQueue(label: "keepsake.hash")
    private let hasher = SHA256Hasher()
    private let slots: DispatchSemaphore
    private let spare = Mutex<[FrameBuffer]>([])
    private let chunkSize: Int

    // MARK: Life cycle

    /// A hasher copying in chunks of `chunkSize` bytes, with at most `buffers` in flight.
    init(chunkSize: Int = 1 << 20, buffers: Int = 4) {
        self.chunkSize = max(4096, chunkSize)
        slots = DispatchSemaphore(value: max(1, buffers))
    }

    // MARK: Hashing

    /// Hands over a copy of `bytes` (waiting while every buffer is in use).
    func update(_ bytes: UnsafeRawBufferPointer) {
        var rest = bytes
        while !rest.isEmpty {
            slots.wait()
            let buffer = spare.withLock { $0.popLast() } ?? FrameBuffer(capacity: chunkSize)
            buffer.count = 0
            let taken = buffer.append(rest)
            rest = UnsafeRawBufferPointer(rebasing: rest[taken...])
            queue.async { [self] in
                hasher.update(buffer.filled)
                spare.withLock { $0.append(buffer) }
                slots.signal()
            }
        }
    }

    /// Adds `count` zero bytes (a hole in a sparse file).
    func updateZeros(_ count: Int64) {
        queue.async { [self] in ManifestCheck.hashZeros(count, into: hasher) }
    }

    /// Waits for everything handed over, returns the hex digest, and starts over.
    func finalizeHex() -> String {
        queue.sync { hasher.finalizeHex() }
    }
}
