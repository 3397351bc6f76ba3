import CArchive
import KeepsakeSupport

/// Compresses a byte stream with libarchive's gzip, xz or lz4 filter on its way to a sink.
///
/// The tar stream is encoded by `ArchiveWriter` itself; libarchive only compresses it, through
/// its raw format (one nameless entry whose data is the whole stream). zstd does not come
/// here: `SeekableZstdSink` writes independent frames and a seek table.
final class LibarchiveCompressor: ByteSink {
    // MARK: State

    private let archive: OpaquePointer
    private let output: SinkBox
    private var closed = false

    /// Receives libarchive's output; keeps the first error the sink threw.
    private final class SinkBox {
        let sink: ByteSink
        var error: Error?
        init(sink: ByteSink) { self.sink = sink }
    }

    // MARK: Life cycle

    /// Opens a compressor for `compression` (not zstd, not none) at `level`; `threads` only
    /// matters for xz.
    init(downstream: ByteSink, compression: Compression, level: Int?, threads: Int) throws {
        _ = LibarchiveSetup.prepared
        guard let archive = archive_write_new() else { throw ArchiveError.setup("out of memory") }
        self.archive = archive
        self.output = SinkBox(sink: downstream)
        // From here on a throw runs deinit, which frees the handle.
        try configure(compression: compression, level: level, threads: threads)
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
        // The raw format takes one regular file; its data is everything written from here on.
        guard let entry = archive_entry_new() else { throw ArchiveError.setup("out of memory") }
        defer { archive_entry_free(entry) }
        archive_entry_set_filetype(entry, KS_AE_IFREG)
        guard archive_write_header(archive, entry) == ARCHIVE_OK else {
            throw ArchiveError.setup(LibarchiveSetup.errorMessage(archive))
        }
    }

    deinit {
        archive_write_free(archive)
    }

    private func configure(compression: Compression, level: Int?, threads: Int) throws {
        func check(_ status: Int32) throws {
            guard status == ARCHIVE_OK else { throw ArchiveError.setup(LibarchiveSetup.errorMessage(archive)) }
        }
        try check(archive_write_set_format_raw(archive))
        // Large blocks mean fewer callbacks; the last one is not padded, so `gzip -t` and
        // `xz -t` accept the file.
        try check(archive_write_set_bytes_per_block(archive, 64 * 1024))
        try check(archive_write_set_bytes_in_last_block(archive, 1))
        switch compression {
        case .gzip: try check(archive_write_add_filter_gzip(archive))
        case .xz: try check(archive_write_add_filter_xz(archive))
        case .lz4: try check(archive_write_add_filter_lz4(archive))
        case .zstd: try check(archive_write_add_filter_zstd(archive))
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

    // MARK: ByteSink

    func write(_ buffer: UnsafeRawBufferPointer) throws {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        var offset = 0
        while offset < buffer.count {
            let written = archive_write_data(archive, base + offset, buffer.count - offset)
            if written <= 0 { throw failure() }
            offset += written
        }
    }

    /// Flushes the compressor (its last block, unpadded).
    func finish() throws {
        guard !closed else { return }
        closed = true
        if archive_write_close(archive) != ARCHIVE_OK { throw failure() }
    }

    private func failure() -> Error {
        if let error = output.error { return error }
        return ArchiveError.write(path: "the archive", reason: LibarchiveSetup.errorMessage(archive))
    }
}
