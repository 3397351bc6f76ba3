/// The SHA-256 of each fixed-size block of a stream, fed in chunks of any size (the same
/// pass that hashes a file whole): the digests (their first `digestLength` bytes) in order,
/// the last block holding what is left.
public final class BlockDigester {
    // MARK: State

    /// Bytes per block.
    public let blockSize: Int
    /// Bytes kept of each digest (32: all of it).
    public let digestLength: Int
    private let hasher = SHA256Hasher()
    /// Bytes of the current block fed so far.
    private var filled = 0
    private var digests: [UInt8] = []

    // MARK: Life cycle

    /// A digester of blocks of `blockSize` bytes (more than zero), keeping the first
    /// `digestLength` bytes (1 to 32) of each digest.
    public init(blockSize: Int, digestLength: Int = 32) {
        self.blockSize = max(1, blockSize)
        self.digestLength = min(32, max(1, digestLength))
    }

    // MARK: Hashing

    /// Feeds the next bytes of the stream.
    public func update(_ buffer: UnsafeRawBufferPointer) {
        var rest = buffer[...]
        while !rest.isEmpty {
            let take = min(blockSize - filled, rest.count)
            hasher.update(UnsafeRawBufferPointer(rebasing: rest.prefix(take)))
            filled += take
            rest = rest.dropFirst(take)
            if filled == blockSize {
                digests.append(contentsOf: hasher.finalizeDigest().prefix(digestLength))
                filled = 0
            }
        }
    }

    /// The digests of every block fed, the last one short when the stream ended inside it;
    /// the digester starts over afterwards.
    public func finish() -> [UInt8] {
        if filled > 0 { digests.append(contentsOf: hasher.finalizeDigest().prefix(digestLength)) }
        defer {
            digests = []
            filled = 0
        }
        return digests
    }
}
