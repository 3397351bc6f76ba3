import CPosix

/// Process-wide memory settings, made once at start-up by the program (not by tests).
public enum ProcessMemory {
    // MARK: Settings

    /// Blocks of this size and more are mapped on their own.
    package static let largeBlock = 256 * 1024

    /// Blocks of 256 KiB and more (frame buffers, manifest storage) are mapped on their own
    /// and given back when freed: with glibc's sliding threshold they stayed in the heap, and
    /// a restore of 100,000 files peaked 7 MB higher, a verify 13 MB.
    public static func mapLargeBlocks() {
        _ = ks_map_large_blocks(largeBlock)
    }
}
