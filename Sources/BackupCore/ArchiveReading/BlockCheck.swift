import KeepsakeHashing
import KeepsakeModel

/// Checks the blocks a block entry holds against a file's block table as its data arrive,
/// each at its offset in the file: which blocks are there whole with the digest recorded,
/// and the first thing wrong (a block that differs, one cut short, data off a block's start).
final class BlockCheck {
    // MARK: State

    private let blockSize: Int64
    /// The digest each block must have; nil for a block that must not be there.
    private let digest: (Int) -> ArraySlice<UInt8>?
    private let fileSize: Int64
    private let hasher = SHA256Hasher()
    /// The block being hashed, and where the next byte of it is expected.
    private var current: (index: Int, next: Int64)?
    private(set) var matched = Set<Int>()
    private(set) var problem: String?

    // MARK: Life cycle

    /// A check of blocks of a file of `fileSize` bytes whose table is `table` (the blocks
    /// whose digest it holds: of a table stored as changes, those of its own archive).
    init(table: BlockTable, fileSize: Int64) {
        blockSize = Int64(table.blockSize)
        let held = table.heldDigests
        digest = { held.indices.contains($0) ? held[$0] : nil }
        self.fileSize = fileSize
    }

    /// A check of the entry of blocks a supplement holds (`held`): only those, each with its digest.
    init(held: HeldBlocks) {
        blockSize = Int64(held.blockSize)
        digest = { held.digest(of: $0) }
        fileSize = held.entrySize
    }

    // MARK: Checking

    /// Takes the entry's next data, at `offset` in the file.
    func add(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        var offset = offset
        var rest = bytes[...]
        while !rest.isEmpty, problem == nil {
            let index = Int(offset / blockSize)
            if let current, current.index != index || current.next != offset {
                problem = "block \(current.index) of it is cut short in this archive"
                return
            }
            if current == nil {
                guard offset == Int64(index) * blockSize, digest(index) != nil else {
                    problem = "this archive holds data of it off its blocks (at byte \(offset))"
                    return
                }
                current = (index, offset)
            }
            let end = min(Int64(index + 1) * blockSize, fileSize)
            let take = Int(min(end - offset, Int64(rest.count)))
            hasher.update(UnsafeRawBufferPointer(rebasing: rest.prefix(take)))
            offset += Int64(take)
            rest = rest.dropFirst(take)
            current?.next = offset
            if offset == end {
                if digest(index)?.elementsEqual(hasher.finalizeDigest().prefix(BlockTable.digestLength)) == true {
                    matched.insert(index)
                } else {
                    problem = "block \(index) of it in this archive does not match its digest in the manifest"
                }
                current = nil
            }
        }
    }

    /// What was found once the entry ends.
    func finish() -> (matched: Set<Int>, problem: String?) {
        if problem == nil, let current { problem = "block \(current.index) of it is cut short in this archive" }
        return (matched, problem)
    }
}
