/// A block of memory that moves between the owner thread and one worker at a time (it is
/// never touched by two threads at once, which is what makes it sendable).
final class FrameBuffer: @unchecked Sendable {
    // MARK: State

    let bytes: UnsafeMutableRawBufferPointer
    /// How many of the bytes are in use.
    var count = 0

    /// Allocates `capacity` bytes.
    init(capacity: Int) {
        bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, capacity), alignment: 64)
    }

    deinit { bytes.deallocate() }

    // MARK: Access

    var capacity: Int { bytes.count }

    /// The bytes in use.
    var filled: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[0..<count]) }

    /// Appends as much of `source` as fits; returns how many bytes were taken.
    func append(_ source: UnsafeRawBufferPointer) -> Int {
        let taken = min(source.count, capacity - count)
        guard taken > 0, let base = source.baseAddress, let destination = bytes.baseAddress else { return 0 }
        (destination + count).copyMemory(from: base, byteCount: taken)
        count += taken
        return taken
    }
}
