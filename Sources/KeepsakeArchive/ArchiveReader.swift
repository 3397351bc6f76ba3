import Foundation
import KeepsakeSupport

/// Reads a tar archive (plain, or compressed in any way libarchive knows) from a byte
/// source, entry by entry, front to back.
///
/// zstd is decompressed by Keepsake itself, several frames at once when the stream is made
/// of independent frames. An archive Keepsake wrote (its first entry is the `.keepsake`
/// folder) is then read by `KeepsakeTarReader`; any other tar, and archives compressed with
/// gzip, xz or lz4, by libarchive (`LibarchiveTarReader`).
public final class ArchiveReader {
    // MARK: State

    /// Which reader parses the tar stream.
    private enum Parser {
        case keepsake(KeepsakeTarReader)
        case libarchive(LibarchiveTarReader)
    }

    private let parser: Parser
    /// Whether libarchive reads an archive Keepsake wrote (compressed with gzip, xz or lz4):
    /// its first entry was the `.keepsake` folder, and its xattr names come encoded. Nil until
    /// the first entry is read.
    private var libarchiveReadsKeepsakeArchive: Bool?
    private let input: TarInput
    /// The source after decompression (a `ParallelZstdSource` for zstd).
    private let decoded: ByteSource
    /// The archive's name, for messages.
    public let name: String
    /// What libarchive warned about while reading (not damage).
    public var warnings: [String] {
        if case .libarchive(let reader) = parser { return reader.warnings }
        return []
    }
    /// The first zstd frame that could not be read, once reading stopped at damage in a
    /// zstd archive made of frames; nil otherwise (then the entry being read says where).
    public var unreadableFrame: Int? { ArchiveReader.unreadableFrame(of: decoded) }

    /// The frame where damage stopped reading `decoded` (a source `decoding` gave), if any.
    package static func unreadableFrame(of decoded: ByteSource?) -> Int? {
        (decoded as? ParallelZstdSource)?.unreadableFrame ?? (decoded as? RangedZstdSource)?.unreadableFrame
    }

    /// Whether Keepsake's own reader parses this archive (rather than libarchive).
    var readsItself: Bool {
        if case .keepsake = parser { return true }
        return false
    }

    // MARK: Life cycle

    /// Opens a reader. Plain (uncompressed) tar and every compression libarchive supports
    /// are recognised from the bytes, not the name. With `keepsakeTar`, the bytes are known
    /// to be the uncompressed tar of a Keepsake archive (or parts of one, whole entries each)
    /// and are not inspected. Once `cancellation` is set, reading throws
    /// `Interruption`.
    public convenience init(source: ByteSource, name: String, keepsakeTar: Bool = false, cancellation: CancellationFlag? = nil) throws {
        try self.init(decoded: keepsakeTar ? source : ArchiveReader.decoding(source, name: name), name: name,
                      keepsakeTar: keepsakeTar, cancellation: cancellation)
    }

    /// `source` decompressed as the reader reads it: a `ParallelZstdSource` for zstd made of
    /// frames (whose `unreadableFrame` says where damage stopped it, even when it stopped
    /// the reader from opening), anything else unchanged.
    package static func decoding(_ source: ByteSource, name: String) throws -> ByteSource {
        do {
            return try DecodedArchiveSource.wrap(source, name: name)
        } catch {
            throw Self.readingError(error, archive: name)
        }
    }

    /// Opens a reader of `decoded`, the bytes `decoding(_:name:)` gave (or, with
    /// `keepsakeTar`, the uncompressed tar of a Keepsake archive).
    package init(decoded: ByteSource, name: String, keepsakeTar: Bool, cancellation: CancellationFlag?) throws {
        self.decoded = decoded
        self.name = name
        input = TarInput(source: decoded, cancellation: cancellation)
        let ours: Bool
        do {
            ours = try keepsakeTar || input.startsWithKeepsakeMarker()
        } catch {
            throw Self.readingError(error, archive: name)
        }
        if ours {
            parser = .keepsake(KeepsakeTarReader(input: input, name: name))
        } else {
            parser = .libarchive(try LibarchiveTarReader(input: input, name: name))
        }
    }

    // MARK: Reading

    /// The next entry's header, or nil at the end of the archive. Throws when the archive
    /// is damaged or truncated.
    public func nextHeader() throws -> ArchiveEntryHeader? {
        switch parser {
        case .keepsake(let reader): return try reader.nextHeader()
        case .libarchive(let reader):
            guard var header = try reader.nextHeader() else { return nil }
            let keepsakeArchive = libarchiveReadsKeepsakeArchive
                ?? (header.path == ArchiveLayout.markerEntryPath && header.type == .directory)
            libarchiveReadsKeepsakeArchive = keepsakeArchive
            if keepsakeArchive && !header.xattrs.isEmpty {
                // libarchive 3.6 leaves SCHILY.xattr names as they were written.
                header.xattrs = header.xattrs.compactMap { attribute in
                    PaxXattrName.decoded(attribute.name).map { .init(name: $0, value: attribute.value) }
                }
            }
            return header
        }
    }

    /// Reads the next block of the current entry's content: the bytes and their offset in
    /// the file (offsets jump over the holes of a sparse file). Nil at the entry's end. The
    /// bytes stay valid until the next call.
    public func nextBlock() throws -> (bytes: UnsafeRawBufferPointer, offset: Int64)? {
        switch parser {
        case .keepsake(let reader): return try reader.nextBlock()
        case .libarchive(let reader): return try reader.nextBlock()
        }
    }

    /// Skips the current entry's content.
    public func skipContent() throws {
        switch parser {
        case .keepsake(let reader): try reader.skipContent()
        case .libarchive(let reader): try reader.skipContent()
        }
    }

    /// Reads the whole current entry into memory, refusing more than `limit` bytes.
    public func readContent(limit: Int) throws -> [UInt8] {
        var content: [UInt8] = []
        while let block = try nextBlock() {
            let end = block.offset.addingReportingOverflow(Int64(block.bytes.count))
            guard block.offset >= 0, !end.overflow, end.partialValue <= Int64(limit) else {
                throw ArchiveError.damaged(archive: name, reason: "an entry is larger than \(limit) bytes")
            }
            if Int(block.offset) > content.count { content.appendZeros(Int(block.offset) - content.count) }
            content.replaceSubrange(Int(block.offset)..<min(content.count, Int(end.partialValue)), with: block.bytes)
        }
        return content
    }

    /// Reads whatever follows the end of the tar stream, to the end of the input: for a
    /// zstd archive that checks its last frames and its seek table. Call after `nextHeader`
    /// returned nil.
    public func readToEnd() throws {
        do {
            try input.drain()
        } catch {
            throw Self.readingError(error, archive: name)
        }
        if let problem = (decoded as? ParallelZstdSource)?.seekTableProblem {
            throw ArchiveError.damaged(archive: name, reason: problem)
        }
    }

    /// What a failure to read the bytes means: a failure of the source itself (a
    /// `SourceFailure`: the store, an interruption) or damage the source already named pass
    /// as they are; anything else is damage.
    private static func readingError(_ error: Error, archive name: String) -> Error {
        switch error {
        case is SourceFailure, is ArchiveError: return error
        default: return ArchiveError.damaged(archive: name, reason: "\(error)")
        }
    }
}
