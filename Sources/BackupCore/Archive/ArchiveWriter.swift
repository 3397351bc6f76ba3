import CArchive
import Foundation

/// Writes a POSIX pax tar, compressed, to a byte sink through libarchive.
public final class ArchiveWriter {
    // MARK: State

    private let archive: OpaquePointer
    private let entry: OpaquePointer
    private let output: SinkBox
    /// Our own zstd compressor (independent frames and a seek table), used for zstd instead
    /// of libarchive's filter, which writes one long frame.
    private let seekable: SeekableZstdSink?
    private var closed = false

    /// Receives libarchive's output; keeps the first error the sink threw.
    private final class SinkBox {
        let sink: ByteSink
        var error: Error?
        init(sink: ByteSink) { self.sink = sink }
    }

    // MARK: Life cycle

    /// Opens a writer. `threads` only matters for zstd and xz.
    public init(sink: ByteSink, compression: Compression, level: Int?, threads: Int) throws {
        _ = LibarchiveSetup.prepared
        guard let archive = archive_write_new(), let entry = archive_entry_new() else {
            throw ArchiveError.setup("out of memory")
        }
        self.archive = archive
        self.entry = entry
        do {
            seekable = compression == .zstd
                ? try SeekableZstdSink(downstream: sink, level: level ?? Compression.zstd.defaultLevel ?? 3, workers: threads,
                                       adaptive: true)
                : nil
        } catch {
            archive_entry_free(entry)
            archive_write_free(archive)
            throw error
        }
        self.output = SinkBox(sink: seekable ?? sink)
        // From here on a throw runs deinit, which frees both handles.
        try configure(compression: seekable == nil ? compression : .none, level: level, threads: threads,
                      buffered: seekable == nil)
        let client = Unmanaged.passUnretained(output).toOpaque()
        let status = archive_write_open2(archive, client, nil, { _, client, buffer, length in
            guard let client, let buffer else { return -1 }
            let box = Unmanaged<SinkBox>.fromOpaque(client).takeUnretainedValue()
            do {
                try box.sink.write(UnsafeRawBufferPointer(start: buffer, count: length))
                return length
            } catch {
                box.error = box.error ?? error
                return -1
            }
        }, nil, nil)
        guard status == ARCHIVE_OK else { throw ArchiveError.setup(LibarchiveSetup.errorMessage(archive)) }
    }

    deinit {
        archive_entry_free(entry)
        archive_write_free(archive)
    }

    /// `buffered` false hands every write straight to the sink (ours buffers whole frames).
    private func configure(compression: Compression, level: Int?, threads: Int, buffered: Bool) throws {
        func check(_ status: Int32) throws {
            guard status == ARCHIVE_OK else { throw ArchiveError.setup(LibarchiveSetup.errorMessage(archive)) }
        }
        try check(archive_write_set_format_pax(archive))
        // Without this, xattrs are written twice and GNU tar warns.
        try check(archive_write_set_format_option(archive, "pax", "xattrheader", "SCHILY"))
        // Large blocks mean fewer callbacks; the last one is not padded, so zstd -t accepts the file.
        try check(archive_write_set_bytes_per_block(archive, buffered ? 64 * 1024 : 0))
        try check(archive_write_set_bytes_in_last_block(archive, 1))
        switch compression {
        case .zstd: try check(archive_write_add_filter_zstd(archive))
        case .gzip: try check(archive_write_add_filter_gzip(archive))
        case .xz: try check(archive_write_add_filter_xz(archive))
        case .lz4: try check(archive_write_add_filter_lz4(archive))
        case .none: break
        }
        let filterName = compression.rawValue
        if let level, compression != .none {
            try check(archive_write_set_filter_option(archive, filterName, "compression-level", String(level)))
        }
        if compression.supportsThreads, threads > 1 {
            try check(archive_write_set_filter_option(archive, filterName, "threads", String(threads)))
        }
        if compression == .gzip {
            // Keep the archive reproducible: no file name or time in the gzip header.
            _ = archive_write_set_filter_option(archive, "gzip", "timestamp", nil)
        }
    }

    // MARK: Writing

    /// Writes an entry's header; for a regular file, `writeData` must follow with exactly
    /// the header's size in bytes (a sparse file's holes included, as zeros).
    public func writeHeader(_ header: ArchiveEntryHeader) throws {
        archive_entry_clear(entry)
        do {
            try header.fill(entry)
        } catch {
            throw ArchiveError.write(path: PathBytes.display(header.path), reason: "\(error)")
        }
        let status = archive_write_header(archive, entry)
        if status < ARCHIVE_WARN { throw failure(for: header.path) }
    }

    /// Writes content bytes of the current entry.
    public func writeData(_ buffer: UnsafeRawBufferPointer, path: [UInt8]) throws {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        var offset = 0
        while offset < buffer.count {
            let written = archive_write_data(archive, base + offset, buffer.count - offset)
            if written <= 0 { throw failure(for: path) }
            offset += written
        }
    }

    /// Ends the current entry (its padding is written now rather than before the next
    /// header), so that `position` is where the next entry will start.
    public func finishEntry() throws {
        if archive_write_finish_entry(archive) < ARCHIVE_WARN { throw failure(for: Array("end of entry".utf8)) }
    }

    /// Bytes of uncompressed tar written so far: after `finishEntry`, the offset at which
    /// the next entry's headers begin.
    public var position: Int64 { Int64(archive_filter_bytes(archive, 0)) }

    /// Finishes the archive (end-of-archive blocks, compressor flush, seek table).
    public func finish() throws {
        guard !closed else { return }
        closed = true
        if archive_write_close(archive) != ARCHIVE_OK {
            if let error = output.error { throw error }
            throw ArchiveError.write(path: "end of archive", reason: LibarchiveSetup.errorMessage(archive))
        }
        try seekable?.finish()
    }

    private func failure(for path: [UInt8]) -> Error {
        if let error = output.error { return error }
        return ArchiveError.write(path: PathBytes.display(path), reason: LibarchiveSetup.errorMessage(archive))
    }
}
