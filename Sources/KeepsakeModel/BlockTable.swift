import Foundation
import KeepsakeJSON

/// The SHA-256 of each fixed-size block of a big file, recorded by the backup that read the
/// file (JSON `blocks` on its manifest line: `{"size":65536,"sha256_b64":"…"}`, the digests
/// one after another, 32 bytes each, in base64). The next backup of a changed file compares
/// its blocks with these to find what changed (issue 34, part 2): fixed blocks, because the
/// big files that change a little (images, databases, mailboxes, logs) are written in place
/// or appended to, and a fixed block is found again by its offset alone.
///
/// Blocks are `blockSize` bytes from the file's start; the last one holds what is left
/// (holes read as zeros, as the file's SHA-256 reads them).
public struct BlockTable: Sendable, Equatable {
    // MARK: Policy

    /// Files of this many bytes or more get a table (16 blocks and up: below that, the
    /// whole file is about what its changed blocks would be).
    public static let threshold: Int64 = 1 << 20
    /// The block size of files up to `mostBlocks` blocks of it (4 GiB).
    public static let standardBlockSize = 64 << 10
    /// Past this many standard blocks, the block size doubles until the table has at most
    /// this many digests (2 MiB): a 16 GiB file has 256 KiB blocks.
    public static let mostBlocks = 1 << 16
    /// The smallest and largest block sizes a manifest may name (powers of two).
    public static let blockSizes = (4 << 10)...(1 << 30)
    /// Bytes of one digest.
    public static let digestLength = 32

    /// The block size Keepsake uses for a file of `size` bytes.
    public static func blockSize(forFileSize size: Int64) -> Int {
        var blockSize = Int64(standardBlockSize)
        while blockSize < Int64(blockSizes.upperBound), size > blockSize * Int64(mostBlocks) { blockSize *= 2 }
        return Int(blockSize)
    }

    /// How many blocks of `blockSize` bytes a file of `size` bytes has; nil when either is
    /// not positive.
    public static func blockCount(fileSize size: Int64, blockSize: Int) -> Int? {
        guard size > 0, blockSize > 0 else { return nil }
        let (quotient, remainder) = size.quotientAndRemainder(dividingBy: Int64(blockSize))
        return Int(exactly: quotient + (remainder > 0 ? 1 : 0))
    }

    // MARK: Fields

    /// Bytes per block: a power of two in `blockSizes`.
    public let blockSize: Int
    /// The blocks' SHA-256 digests, `digestLength` bytes each, in file order.
    public let digests: [UInt8]

    /// The number of blocks.
    public var count: Int { digests.count / BlockTable.digestLength }

    /// A table of `digests` (32 bytes per block) for blocks of `blockSize` bytes.
    public init(blockSize: Int, digests: [UInt8]) {
        self.blockSize = blockSize
        self.digests = digests
    }

    /// The digest of block `index`.
    public func digest(at index: Int) -> ArraySlice<UInt8> {
        digests[index * BlockTable.digestLength ..< (index + 1) * BlockTable.digestLength]
    }

    // MARK: Encoding

    /// Appends the table as its JSON object.
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("size"); writer.int(Int64(blockSize))
        writer.key("sha256_b64"); writer.string(Data(digests).base64EncodedString())
        writer.endObject()
    }

    /// Reads the table of a file of `fileSize` bytes from its JSON object, or says why it is
    /// not a table of a file of that size.
    public static func parse(_ json: JSONValue, fileSize: Int64) -> Result<BlockTable, Refusal> {
        guard case .object(let object) = json else { return .failure(Refusal("'blocks' must be a JSON object")) }
        guard let size = object["size"]?.int64Value, let blockSize = Int(exactly: size), blockSizes.contains(blockSize),
              blockSize & (blockSize - 1) == 0 else {
            return .failure(Refusal("'blocks' must give its block 'size', a power of two from 4096 to 1073741824"))
        }
        guard let encoded = object["sha256_b64"]?.stringValue, let decoded = Data(base64Encoded: encoded) else {
            return .failure(Refusal("'blocks' must give 'sha256_b64', the blocks' digests in base64"))
        }
        let count = blockCount(fileSize: fileSize, blockSize: blockSize)
        let expected = count.map { $0.multipliedReportingOverflow(by: digestLength) }
        guard let expected, !expected.overflow, decoded.count == expected.partialValue else {
            return .failure(Refusal("'blocks' holds \(decoded.count / digestLength) digests, where a file of \(fileSize) bytes "
                                    + "has \(count ?? 0) blocks of \(blockSize)"))
        }
        return .success(BlockTable(blockSize: blockSize, digests: Array(decoded)))
    }

    /// Why a `blocks` object was refused.
    public struct Refusal: Error, Equatable {
        public let reason: String
        init(_ reason: String) { self.reason = reason }
    }
}
