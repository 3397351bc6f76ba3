import Foundation
import KeepsakeArchive
import KeepsakeJSON
import KeepsakeSupport

/// Blocks of a big file that a supplement holds for kept backups (see `SupplementManifest`):
/// those of the version backup `origin` stored (whole, or in its block entry) that files
/// stored by blocks in kept backups take, once `origin` is let go. They lie in one block
/// entry of the supplement's archive (`SupplementNaming.blocksEntryPath`), each at its offset
/// in the file, as in a backup's block entry.
///
/// One line of the supplement's manifest:
/// `{"path":"…","in":ORIGIN,"size":S,"at":A,"len":L,"held_blocks":{"size":65536,"runs":[FIRST,COUNT,…],"digests_b64":"…"}}`:
/// `size` is the entry's (where its last block ends), `runs` the blocks held (the index of
/// the first of each run, and how many), `digests_b64` their digests in that order, as a
/// block table has them (`BlockTable.digestLength` bytes each).
public struct HeldBlocks: Sendable, Equatable {
    // MARK: Fields

    /// The backup whose version of the file the blocks are of.
    public var origin: BackupID
    /// The file's archive path.
    public var path: [UInt8]
    /// Bytes per block, as the tables that take them say.
    public var blockSize: Int
    /// The blocks held, ascending.
    public var indices: [Int]
    /// Their digests, in the order of `indices`.
    public var digests: [UInt8]
    /// The size of the entry: where its last block ends.
    public var entrySize: Int64
    /// Where the entry lies in the supplement's tar stream.
    public var archiveOffset: Int64
    public var archiveLength: Int64

    /// Blocks `indices` (ascending, digests in that order) of `origin`'s version of the file
    /// at `path`, in the entry of `entrySize` bytes at `archiveOffset` (`archiveLength` bytes).
    public init(origin: BackupID, path: [UInt8], blockSize: Int, indices: [Int], digests: [UInt8], entrySize: Int64,
                archiveOffset: Int64 = 0, archiveLength: Int64 = 0) {
        self.origin = origin
        self.path = path
        self.blockSize = blockSize
        self.indices = indices
        self.digests = digests
        self.entrySize = entrySize
        self.archiveOffset = archiveOffset
        self.archiveLength = archiveLength
    }

    // MARK: Looking up

    /// The digest of block `index`, when it is held.
    public func digest(of index: Int) -> ArraySlice<UInt8>? {
        guard let position = position(of: index) else { return nil }
        return digests[position * BlockTable.digestLength ..< (position + 1) * BlockTable.digestLength]
    }

    /// Whether block `index` is held with the digest `digest`.
    public func holds(_ index: Int, digest: ArraySlice<UInt8>) -> Bool {
        self.digest(of: index)?.elementsEqual(digest) == true
    }

    /// Where block `index` is in `indices`.
    private func position(of index: Int) -> Int? {
        var low = 0, high = indices.count
        while low < high {
            let middle = (low + high) / 2
            if indices[middle] < index { low = middle + 1 } else { high = middle }
        }
        return low < indices.count && indices[low] == index ? low : nil
    }

    /// Where block `index` lies in the file (its last block may be short).
    public func range(of index: Int) -> Range<Int64> {
        let start = Int64(index) * Int64(blockSize)
        return start ..< min(start + Int64(blockSize), max(start, entrySize))
    }

    /// Where the entry lies in the supplement's tar stream.
    public var archiveRange: Range<Int64> { archiveOffset ..< archiveOffset + archiveLength }

    /// The entry's data regions: runs of adjacent blocks held.
    public var regions: [(offset: Int64, length: Int64)] {
        var regions: [(offset: Int64, length: Int64)] = []
        for index in indices {
            let range = range(of: index)
            if let last = regions.last, last.offset + last.length == range.lowerBound {
                regions[regions.count - 1].length += Int64(range.count)
            } else {
                regions.append((range.lowerBound, Int64(range.count)))
            }
        }
        return regions
    }

    // MARK: Encoding

    /// Appends the line's JSON object.
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        ManifestEntry.writeBytes(path, key: "path", to: &writer)
        writer.key("in"); writer.string(origin.rawValue)
        writer.key("size"); writer.int(entrySize)
        writer.key("at"); writer.int(archiveOffset)
        writer.key("len"); writer.int(archiveLength)
        writer.key("held_blocks")
        writer.beginObject()
        writer.key("size"); writer.int(Int64(blockSize))
        writer.key("runs")
        writer.beginArray()
        var start = 0
        while start < indices.count {
            var end = start + 1
            while end < indices.count, indices[end] == indices[end - 1] + 1 { end += 1 }
            writer.int(Int64(indices[start]))
            writer.int(Int64(end - start))
            start = end
        }
        writer.endArray()
        writer.key("digests_b64"); writer.string(Data(digests).base64EncodedString())
        writer.endObject()
        writer.endObject()
    }

    // MARK: Decoding

    /// Reads a line that has `held_blocks` (line `line` of its manifest), or throws a
    /// `ManifestError` saying why it is not one Keepsake writes: blocks in order, none past
    /// the entry's end and the last ending there, one digest each, placed in the archive.
    public static func parse(_ json: JSONValue, line: Int) throws -> HeldBlocks {
        func refuse(_ reason: String) -> ManifestError { .invalidLine(line: line, reason: reason) }
        // The path, `in`, `at` and `len` as a manifest line has them (the same rules for paths).
        var fields = json.objectValue ?? JSONObject()
        fields["type"] = .string(EntryType.file.rawValue)
        fields["held_blocks"] = nil
        let entry = try ManifestEntry(json: .object(fields), line: line)
        guard let origin = entry.storedIn, let offset = entry.archiveOffset, let length = entry.archiveLength, offset >= 0,
              length > 0, offset <= Int64.max - length, entry.size > 0 else {
            throw refuse("held blocks need 'in', 'size', 'at' and 'len'")
        }
        guard let held = json["held_blocks"]?.objectValue, let size = held["size"]?.int64Value,
              let blockSize = Int(exactly: size), BlockTable.blockSizes.contains(blockSize), blockSize & (blockSize - 1) == 0 else {
            throw refuse("'held_blocks' must give its block 'size', a power of two from 4096 to 1073741824")
        }
        guard let blockCount = BlockTable.blockCount(fileSize: entry.size, blockSize: blockSize),
              let numbers = held["runs"]?.arrayValue, !numbers.isEmpty, numbers.count % 2 == 0 else {
            throw refuse("'held_blocks' must give 'runs', pairs of the first block held and how many")
        }
        // The runs are checked and counted before any index is made: their count is bounded
        // by the digests the line holds, not by what a forged `size` or run says.
        var runs: [Range<Int>] = []
        var total = 0
        for pair in stride(from: 0, to: numbers.count, by: 2) {
            guard let first = numbers[pair].int64Value.flatMap({ Int(exactly: $0) }),
                  let count = numbers[pair + 1].int64Value.flatMap({ Int(exactly: $0) }),
                  first >= (runs.last?.upperBound ?? 0), count > 0, count <= blockCount - first else {
                throw refuse("'runs' of 'held_blocks' must be in order, within the \(blockCount) blocks of its 'size'")
            }
            runs.append(first ..< first + count)
            total += count
        }
        guard runs.last?.upperBound == blockCount else {
            throw refuse("'size' of held blocks must be where the last of them ends")
        }
        guard let encoded = held["digests_b64"]?.stringValue, let digests = Data(base64Encoded: encoded),
              digests.count / BlockTable.digestLength == total, digests.count % BlockTable.digestLength == 0 else {
            throw refuse("'digests_b64' of 'held_blocks' must hold one digest of \(BlockTable.digestLength) bytes a block held")
        }
        return HeldBlocks(origin: origin, path: entry.path, blockSize: blockSize, indices: runs.flatMap { Array($0) },
                          digests: Array(digests), entrySize: entry.size, archiveOffset: offset, archiveLength: length)
    }
}
