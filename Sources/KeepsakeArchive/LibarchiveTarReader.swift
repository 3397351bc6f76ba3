import CArchive
import KeepsakeSupport

/// Reads a tar stream through libarchive (any tar format and any compression it knows),
/// entry by entry: what reads archives Keepsake did not write, or wrote compressed with
/// gzip, xz or lz4 (`KeepsakeTarReader` reads the rest).
final class LibarchiveTarReader {
    // MARK: State

    private let archive: OpaquePointer
    private let box: InputBox
    /// The archive's name, for messages.
    private let name: String
    /// What libarchive warned about while reading (not damage).
    private(set) var warnings: [String] = []

    /// Feeds libarchive from the input; keeps the first error reading it threw.
    private final class InputBox {
        let input: TarInput
        var error: Error?
        /// Where the buffer handed to libarchive points when there are no bytes (never nil).
        let nothing = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
        init(input: TarInput) { self.input = input }
        deinit { nothing.deallocate() }
    }

    // MARK: Life cycle

    /// Opens `input` (the bytes as they are stored: libarchive recognises the compression).
    init(input: TarInput, name: String) throws {
        _ = LibarchiveSetup.prepared
        guard let archive = archive_read_new() else { throw ArchiveError.setup("out of memory") }
        self.archive = archive
        self.name = name
        box = InputBox(input: input)
        archive_read_support_filter_all(archive)
        archive_read_support_format_tar(archive)
        archive_read_support_format_gnutar(archive)
        let client = Unmanaged.passUnretained(box).toOpaque()
        let status = archive_read_open2(archive, client, nil, { _, client, bufferOut in
            guard let client, let bufferOut else { return -1 }
            let box = Unmanaged<InputBox>.fromOpaque(client).takeUnretainedValue()
            do {
                // A view valid until the next call, as libarchive expects.
                let view = try box.input.next(upTo: 1 << 30)
                bufferOut.pointee = view.baseAddress ?? UnsafeRawPointer(box.nothing)
                return view.count
            } catch {
                box.error = box.error ?? error
                return -1
            }
        }, nil, nil)
        guard status == ARCHIVE_OK else {
            // deinit frees the handle: every stored property is set by now.
            // A failure of the source itself (a stop, the store) passes as it is: it is not damage.
            if let stop = box.error as? SourceFailure { throw stop }
            // The source's own error already says the archive is damaged: not wrapped again.
            if let damaged = box.error as? ArchiveError { throw damaged }
            let reason = box.error.map { "\($0)" } ?? LibarchiveSetup.errorMessage(archive)
            throw ArchiveError.damaged(archive: name, reason: reason)
        }
    }

    deinit {
        archive_read_free(archive)
    }

    // MARK: Reading

    /// The next entry's header, or nil at the end of the archive. Throws when the archive
    /// is damaged or truncated.
    func nextHeader() throws -> ArchiveEntryHeader? {
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

    /// The next block of the current entry's content and its offset in the file (offsets
    /// jump over the holes of a sparse file); nil at the entry's end.
    func nextBlock() throws -> (bytes: UnsafeRawBufferPointer, offset: Int64)? {
        var buffer: UnsafeRawPointer?
        var size = 0
        var offset: la_int64_t = 0
        let status = archive_read_data_block(archive, &buffer, &size, &offset)
        if status == ARCHIVE_EOF { return nil }
        if status < ARCHIVE_WARN { throw failure() }
        return (UnsafeRawBufferPointer(start: buffer, count: size), offset)
    }

    /// Skips the current entry's content.
    func skipContent() throws {
        if archive_read_data_skip(archive) < ARCHIVE_WARN { throw failure() }
    }

    private func failure() -> Error {
        if let error = box.error { return error }
        return ArchiveError.damaged(archive: name, reason: LibarchiveSetup.errorMessage(archive))
    }
}
