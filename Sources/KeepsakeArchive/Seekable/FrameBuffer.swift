/// A block of memory that moves between the owner thread and one worker at a time (it is
/// never touched by two threads at once, which is what makes it sendable).
package final class FrameBuffer: @unchecked Sendable {
    // MARK: State

    package let bytes: UnsafeMutableRawBufferPointer
    /// How many of the bytes are in use.
    package var count = 0

    /// Allocates `capacity` bytes.
    package init(capacity: Int) {
        bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, capacity), alignment: 64)
    }

    deinit { bytes.deallocate() }

    // MARK: Access

    package var capacity: Int { bytes.count }

    /// The bytes in use.
    var filled: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[0..<count]) }

    /// Appends as much of `source` as fits; returns how many bytes were taken.
    package func append(_ source: UnsafeRawBufferPointer) -> Int {
        let taken = min(source.count, capacity - count)
        guard taken > 0, let base = source.baseAddress, let destination = bytes.baseAddress else { return 0 }
        (destination + count).copyMemory(from: base, byteCount: taken)
        count += taken
        return taken
    }
}
