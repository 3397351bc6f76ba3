import Glibc
import KeepsakeSupport

/// Parses a manifest as its bytes arrive, a line at a time, into compact entries (or hands
/// each entry to a visitor and keeps none): the manifest's text is never held whole
/// (100,000 entries are about 33 MB of JSON lines). Throws `ManifestError` naming the line
/// and the problem.
package struct ManifestParser {
    // MARK: Settings

    /// What to do with each entry kept: nil stores it.
    package typealias Visitor = (ManifestEntry) throws -> Void

    private let keeping: Manifest.EntryFilter?
    private let visit: Visitor?
    /// With a name, the bytes are held to `ManifestSizeLimit` (the name is for messages).
    private let limitedName: String?

    // MARK: State

    private var entries = ManifestEntries()
    /// The start of a line whose end has not arrived yet.
    private var pending: [UInt8] = []
    private var lineNumber = 0
    private var total: Int64 = 0
    private var limit = ManifestSizeLimit.summaryLineLimit + ManifestSizeLimit.allowance
    private var declared: Int64 = 0

    // MARK: Life cycle

    /// A parser keeping the entries `keeping` accepts (all without it); with `limitedName`,
    /// a manifest larger than its summary allows is refused as soon as it is.
    /// With `visit`, entries are handed to it (after the summary, which `summary` holds)
    /// and none is stored.
    init(keeping: Manifest.EntryFilter?, limitedName: String? = nil, visit: Visitor? = nil) {
        self.keeping = keeping
        self.limitedName = limitedName
        self.visit = visit
    }

    /// The summary, once its line has been parsed.
    private(set) var summary: BackupSummary?
    /// Its id, kept apart: reading it from `summary` for every line copied the whole summary.
    private var owner: BackupID?

    // MARK: Feeding

    /// Parses the complete lines among what has arrived.
    mutating func feed(_ chunk: UnsafeRawBufferPointer) throws {
        guard !chunk.isEmpty else { return }
        if let limitedName {
            total += Int64(chunk.count)
            if total > Int64(limit) {
                throw ManifestError.tooLarge(name: limitedName, size: total, limit: limit, entries: declared)
            }
        }
        let bytes = chunk.bindMemory(to: UInt8.self)
        var start = 0
        if !pending.isEmpty {
            guard let newline = ManifestParser.newline(in: bytes, from: 0) else {
                pending.append(contentsOf: bytes)
                try checkPendingSummary()
                return
            }
            pending.append(contentsOf: bytes[..<newline])
            let line = pending
            pending.removeAll(keepingCapacity: true)
            try line.withUnsafeBufferPointer { try take($0) }
            start = newline + 1
        }
        while start < bytes.count {
            guard let newline = ManifestParser.newline(in: bytes, from: start) else {
                pending.append(contentsOf: bytes[start...])
                try checkPendingSummary()
                return
            }
            try take(UnsafeBufferPointer(rebasing: bytes[start..<newline]))
            start = newline + 1
        }
    }

    /// Where the next newline is at or after `start` (memchr: the C library's search reads
    /// a word or a vector at a time, where a loop in Swift reads a byte).
    private static func newline(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard let base = bytes.baseAddress, start < bytes.count,
              let found = memchr(base + start, 0x0A, bytes.count - start) else { return nil }
        return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
    }

    /// Parses what is left and returns the manifest.
    mutating func finish() throws -> Manifest {
        if !pending.isEmpty {
            let line = pending
            pending = []
            try line.withUnsafeBufferPointer { try take($0) }
        }
        guard let summary else { throw ManifestError.notAManifest(reason: "it is empty") }
        entries.trim()
        return Manifest(summary: summary, entries: entries)
    }

    /// Parses all of `bytes`.
    static func parse(_ bytes: UnsafeRawBufferPointer, keeping: Manifest.EntryFilter?) throws -> Manifest {
        var parser = ManifestParser(keeping: keeping)
        try parser.feed(bytes)
        return try parser.finish()
    }

    /// Reads `source` to its end, parsing as it goes; `name` says in messages what is read.
    /// `observing` sees every byte, in order.
    package static func read(_ source: ByteSource, name: String, keeping: Manifest.EntryFilter?,
                             observing: ((UnsafeRawBufferPointer) -> Void)? = nil, visit: Visitor? = nil) throws -> Manifest {
        var parser = ManifestParser(keeping: keeping, limitedName: name, visit: visit)
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = try chunk.withUnsafeMutableBytes { try source.read(into: $0) }
            if count == 0 { return try parser.finish() }
            try chunk.withUnsafeBytes { buffer in
                let piece = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                observing?(piece)
                try parser.feed(piece)
            }
        }
    }

    // MARK: Lines

    /// A summary line cannot grow without bound while its end is awaited.
    private func checkPendingSummary() throws {
        if summary == nil, pending.count > ManifestSizeLimit.summaryLineLimit {
            throw ManifestError.notAManifest(reason: "\(limitedName ?? "it") begins with a line longer than "
                + "\(ManifestSizeLimit.summaryLineLimit) bytes")
        }
    }

    private mutating func take(_ line: UnsafeBufferPointer<UInt8>) throws {
        lineNumber += 1
        guard let owner else {
            // Blank lines before the summary are allowed.
            guard !line.isEmpty else { return }
            let parsed = try Manifest.parseSummary(Array(line))
            self.summary = parsed
            owner = parsed.id
            let counts = [parsed.fileCount, parsed.directoryCount, parsed.symlinkCount, parsed.hardlinkCount, parsed.otherCount]
            declared = counts.reduce(Int64(0)) { total, count in
                let sum = total.addingReportingOverflow(max(0, count))
                return sum.overflow ? Int64.max : sum.partialValue
            }
            limit = ManifestSizeLimit.limit(forEntries: declared, blockDigests: parsed.blockDigests)
            if declared > 0, visit == nil { entries.reserveCapacity(Int(min(declared, 1 << 20))) }
            if let limitedName, total > Int64(limit) {
                throw ManifestError.tooLarge(name: limitedName, size: total, limit: limit, entries: declared)
            }
            return
        }
        if line.isEmpty { return }
        // A line Keepsake wrote is judged from its start: one left out is not decoded.
        if let keeping, let start = ManifestLineDecoder.peek(line) {
            guard keeping(start.path, start.type) else { return }
            try take(entryLine: line, owner: owner, keeping: nil)
        } else {
            try take(entryLine: line, owner: owner, keeping: keeping)
        }
    }

    /// Decodes an entry line and keeps the entry when `keeping` (if any) accepts it. Stored
    /// entries of the lines Keepsake writes go straight from the line into `entries`.
    private mutating func take(entryLine line: UnsafeBufferPointer<UInt8>, owner: BackupID,
                               keeping: Manifest.EntryFilter?) throws {
        if visit == nil, let fields = try ManifestLineDecoder.fields(line, lineNumber: lineNumber) {
            try Manifest.checkHolder(fields.storedIn, of: owner, lineNumber: lineNumber)
            if let keeping, !keeping(fields.path, fields.type) { return }
            entries.append(fields)
            return
        }
        let entry = try Manifest.parseEntryLine(line, lineNumber: lineNumber, owner: owner)
        if let keeping, !entry.path.withUnsafeBufferPointer({ keeping($0, entry.type) }) { return }
        try keep(entry)
    }

    private mutating func keep(_ entry: ManifestEntry) throws {
        if let visit { try visit(entry) } else { entries.append(entry) }
    }
}
