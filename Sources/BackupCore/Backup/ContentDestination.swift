/// Where `SourceFileReader` puts a file's content: buffers handed out one at a time, each
/// given back filled before the next is asked for. The reader reads straight into them, so a
/// reader thread hands its bytes to the archive writer without a copy.
protocol ContentDestination {
    /// A buffer for up to `wanted` bytes (never empty; it may be smaller).
    mutating func buffer(wanted: Int) throws -> UnsafeMutableRawBufferPointer

    /// The first `count` bytes of the buffer handed out last are the next content.
    mutating func filled(_ count: Int) throws
}

/// Content read into one reused buffer and handed to a closure, piece by piece.
struct ConsumingDestination: ContentDestination {
    // MARK: State

    private let scratch: UnsafeMutableRawBufferPointer
    private let consume: (UnsafeRawBufferPointer) throws -> Void

    /// Reads into `scratch` and hands each piece to `consume`.
    init(scratch: UnsafeMutableRawBufferPointer, consume: @escaping (UnsafeRawBufferPointer) throws -> Void) {
        self.scratch = scratch
        self.consume = consume
    }

    // MARK: ContentDestination

    func buffer(wanted: Int) throws -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: scratch[0..<min(scratch.count, max(1, wanted))])
    }

    func filled(_ count: Int) throws {
        try consume(UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
    }
}
