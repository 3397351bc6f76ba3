// MARK: - Growing byte buffers

extension Array where Element == UInt8 {
    /// Appends `count` zero bytes: room a read fills in place, or the holes of sparse content.
    ///
    /// Through `Array(repeating:)`, one memset: appending `repeatElement` walks the bytes one at
    /// a time through generic code, 0.4 s a MiB in a debug build (the test suite's), where every
    /// incremental backup paid it for each MiB of its parent's manifest. Up to 64 KiB (a tar
    /// block's padding, a writer's staging) copies from one shared run of zeros rather than
    /// allocating.
    package mutating func appendZeros(_ count: Int) {
        if count <= sharedZeros.count {
            append(contentsOf: sharedZeros[0..<count])
        } else {
            append(contentsOf: [UInt8](repeating: 0, count: count))
        }
    }
}

/// Zeros to copy from (a global `let`: made once, on first use, safely across threads).
private let sharedZeros = [UInt8](repeating: 0, count: 64 * 1024)
