// MARK: - Growing byte buffers

extension Array where Element == UInt8 {
    /// Appends `count` zero bytes: room a read fills in place, or the holes of sparse content.
    ///
    /// Through `Array(repeating:)`, one memset: appending `repeatElement` walks the bytes one at
    /// a time through generic code, 0.4 s a MiB in a debug build (the test suite's), where every
    /// incremental backup paid it for each MiB of its parent's manifest.
    mutating func appendZeros(_ count: Int) {
        append(contentsOf: [UInt8](repeating: 0, count: count))
    }
}
