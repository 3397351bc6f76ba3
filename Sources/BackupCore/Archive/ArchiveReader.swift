import CArchive
import Foundation

/// Reads a tar archive (any compression libarchive knows) from a byte source, entry by
/// entry, front to back.
public final class ArchiveReader {
    // MARK: State

    private let archive: OpaquePointer
    private let input: SourceBox
    /// The archive's name, for messages.
    public let name: String
    /// What libarchive warned about while reading (not damage).
    public private(set) var warnings: [String] = []
    /// The first zstd frame that could not be read, once reading stopped at damage in a
    /// zstd archive made of frames; nil otherwise (then the entry being read says where).
    public var unreadableFrame: Int? { (input.source as? ParallelZstdSource)?.unreadableFrame }

    /// Feeds libarchive from the source; keeps the first error the source threw.
    private final class SourceBox {
        let source: ByteSource
        /// The source, when it can hand over its decompressed frames without a copy.
        let lending: LendingSource?
        var buffer: UnsafeMutableRawBufferPointer
        var error: Error?
        /// Checked before every read: libarchive's own loops (skipping an entry, finding
        /// the next header) pass through here.
        let cancellation: CancellationFlag?
        init(source: ByteSource, cancellation: CancellationFlag?) {
            self.source = source
            self.cancellation = cancellation
            lending = source as? LendingSource
            buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
        }
        deinit { buffer.deallocate() }
    }

    // MARK: Life cycle

    /// Opens a reader. Plain (uncompressed) tar and every compression libarchive supports
    /// are recognised from the bytes, not the name; zstd is decompressed by Keepsake itself,
    /// several frames at once when the stream is made of independent frames. With
    /// `plainTar`, the bytes are known to be uncompressed tar and are not inspected. Once
    /// `cancellation` is set, reading throws `EngineError.interrupted`.
    public init(source: ByteSource, name: String, plainTar: Bool = false, cancellation: CancellationFlag? = nil) throws {
        _ = LibarchiveSetup.prepared
        let decoded: ByteSource
        do {
            decoded = plainTar ? source : try DecodedArchiveSource.wrap(source, name: name)
        } catch let error as StorageError {
            throw error
        } catch let error as ArchiveError {
            throw error
        } catch {
            throw ArchiveError.damaged(archive: name, reason: "\(error)")
        }
        guard let archive = archive_read_new() else { throw ArchiveError.setup("out of memory") }
        self.archive = archive
        self.name = name
        self.input = SourceBox(source: decoded, cancellation: cancellation)
        archive_read_support_filter_all(archive)
        archive_read_support_format_tar(archive)
        archive_read_support_format_gnutar(archive)
        let client = Unmanaged.passUnretained(input).toOpaque()
        let status = archive_read_open2(archive, client, nil, { _, client, bufferOut in
            guard let client, let bufferOut else { return -1 }
            let box = Unmanaged<SourceBox>.fromOpaque(client).takeUnretainedValue()
            do {
                try box.cancellation?.check()
                if let lending = box.lending {
                    let view = try lending.lend(scratch: box.buffer)
                    bufferOut.pointee = view.baseAddress.map { UnsafeRawPointer($0) } ?? UnsafeRawPointer(box.buffer.baseAddress)
                    return view.count
                }
                let count = try box.source.read(into: box.buffer)
                bufferOut.pointee = UnsafeRawPointer(box.buffer.baseAddress)
                return count
            } catch {
                box.error = box.error ?? error
                return -1
            }
        }, nil, nil)
        guard status == ARCHIVE_OK else {
            // deinit frees the handle: every stored property is set by now.
            if let stop = input.error as? EngineError { throw stop }
            // The source's own error already says the archive is damaged: not wrapped again.
            if let damaged = input.error as? ArchiveError { throw damaged }
            let reason = input.error.map { "\($0)" } ?? LibarchiveSetup.errorMessage(archive)
            throw ArchiveError.damaged(archive: name, reason: reason)
        }
    }

    deinit {
        archive_read_free(archive)
    }

    // MARK: Reading

    /// The next entry's header, or nil at the end of the archive. Throws when the archive
    /// is damaged or truncated.
    public func nextHeader() throws -> ArchiveEntryHeader? {
        while true {
            var entry: OpaquePointer?
            let status = archive_read_next_header(archive, &entry)
            if status == ARCHIVE_EOF { return nil }
            if status < ARCHIVE_WARN || entry == nil { throw failure() }
            if status == ARCHIVE_RETRY {
                // A header whose checksum fails ("Damaged tar archive"), with no name. Asked
                // again, libarchive reads the next 512 bytes as a header, and on through file
                // content or decoded garbage until a block passes the checksum by chance: an
                // entry with a made-up name. Damage ends the archive here.
                throw ArchiveError.damaged(archive: name, reason: LibarchiveSetup.errorMessage(archive)
                    + " (a tar header does not match its checksum)")
            }
            if status == ARCHIVE_WARN {
                // A warning that speaks of damage is damage, not a detail (other warnings,
                // such as names it cannot convert, are kept for the caller).
                let message = LibarchiveSetup.errorMessage(archive)
                let lowered = message.lowercased()
                if lowered.contains("damaged") || lowered.contains("checksum") || lowered.contains("truncated") {
                    throw ArchiveError.damaged(archive: name, reason: message)
                }
                warnings.append(message)
            }
            guard let entry else { throw failure() }
            // Entries without a usable name cannot be restored or listed; skip them.
            if let header = ArchiveEntryHeader(entry: entry) { return header }
        }
    }

    /// Reads the next block of the current entry's content: the bytes and their offset in
    /// the file (offsets jump over the holes of a sparse file). Nil at the entry's end.
    public func nextBlock() throws -> (bytes: UnsafeRawBufferPointer, offset: Int64)? {
        var buffer: UnsafeRawPointer?
        var size = 0
        var offset: la_int64_t = 0
        let status = archive_read_data_block(archive, &buffer, &size, &offset)
        if status == ARCHIVE_EOF { return nil }
        if status < ARCHIVE_WARN { throw failure() }
        return (UnsafeRawBufferPointer(start: buffer, count: size), offset)
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

    /// Reads the current entry, a manifest, into memory within the limit its own summary
    /// line sets (see `ManifestSizeLimit`); `name` says what it is in messages.
    public func readManifest(name: String) throws -> [UInt8] {
        var manifest = ManifestSizeLimit(name: name)
        while let block = try nextBlock() {
            try manifest.add(block.bytes, at: block.offset)
        }
        return manifest.bytes
    }

    /// Reads whatever follows the end of the tar stream, to the end of the input: for a
    /// zstd archive that checks its last frames and its seek table. Call after `nextHeader`
    /// returned nil.
    public func readToEnd() throws {
        do {
            while try input.source.read(into: input.buffer) > 0 {}
            if let problem = (input.source as? ParallelZstdSource)?.seekTableProblem {
                throw ArchiveError.damaged(archive: name, reason: problem)
            }
        } catch let error as ArchiveError {
            throw error
        } catch let error as StorageError {
            throw error
        } catch {
            throw ArchiveError.damaged(archive: name, reason: "\(error)")
        }
    }

    /// Skips the current entry's content.
    public func skipContent() throws {
        if archive_read_data_skip(archive) < ARCHIVE_WARN { throw failure() }
    }

    private func failure() -> Error {
        if let error = input.error { return error }
        return ArchiveError.damaged(archive: name, reason: LibarchiveSetup.errorMessage(archive))
    }
}
