import KeepsakeSupport

/// Reads the tar stream of an archive Keepsake wrote — POSIX pax: ustar headers, `x`
/// extended headers with the records `PaxHeaderEncoder` writes, sparse files in GNU's
/// format 1.0 — entry by entry, handing out content where it lies in the decoded stream.
///
/// It gives what libarchive's reader gave for the same archives, without its cost (libarchive
/// turned every regular file's name into wide characters) and without its slips (a time
/// between -1 and 0 s lost its sign, xattr names stayed percent-encoded). Nothing read is trusted: every number is checked
/// against its field and what follows, a sparse map against the file's size and the bytes
/// stored, and anything Keepsake does not write is damage. Paths are handed on as bytes
/// for `ArchivePath` to judge; a NUL in one is kept, not cut at, so that it is refused there.
final class KeepsakeTarReader {
    // MARK: State

    private let input: TarInput
    /// The archive's name, for messages.
    private let name: String
    /// What is left of the current entry.
    private var current = Content()
    private var ended = false
    /// The last owner names seen, as bytes and as text: most entries repeat them.
    private var ownerNames: [(bytes: [UInt8], text: String?)] = []

    /// The bytes after the current header: the data runs still to hand out (with where each
    /// starts in the file), then what is stored but not handed out, then the block padding.
    private struct Content {
        var runs: [ArchiveEntryHeader.SparseRegion] = []
        var runIndex = 0
        var doneInRun: Int64 = 0
        var unread: Int64 = 0
        var padding: Int64 = 0
    }

    // MARK: Life cycle

    /// Reads the tar stream from `input`; `name` names the archive in messages.
    init(input: TarInput, name: String) {
        self.input = input
        self.name = name
    }

    // MARK: Reading

    /// The next entry's header, or nil at the end of the archive (two zero blocks, or the
    /// end of the stream between entries). Throws when the archive is damaged or truncated.
    func nextHeader() throws -> ArchiveEntryHeader? {
        var extended: PaxExtendedHeader?
        while true {
            try skipContent()
            guard !ended else { return nil }
            let block = try input.contiguous(TarHeaderBlock.size)
            if block.isEmpty {
                guard extended == nil else { throw damaged("it ends after a pax header, before its entry") }
                ended = true
                return nil
            }
            guard block.count == TarHeaderBlock.size else { throw damaged("it ends inside a tar header") }
            let view = UstarHeaderView(block)
            if view.isZero {
                guard extended == nil else { throw damaged("a pax header is followed by the end of the archive") }
                ended = true
                return nil
            }
            guard view.checksumMatches else { throw damaged("a tar header does not match its checksum") }
            guard view.isPOSIX else { throw damaged("a tar header is not in the POSIX form Keepsake writes") }
            guard let stored = view.number(.size), stored >= 0 else { throw damaged("a tar header's size is not a number") }
            switch view.typeFlag {
            case UInt8(ascii: "x"):
                guard stored <= PaxExtendedHeader.largestSize else { throw damaged("a pax header is larger than 1 MiB") }
                let records = try input.contiguous(Int(stored))
                guard records.count == Int(stored) else { throw damaged("it ends inside a pax header") }
                var parsed = extended ?? PaxExtendedHeader()
                do {
                    try parsed.add(records: records)
                } catch {
                    throw damaged(error.reason)
                }
                extended = parsed
                current = Content(padding: TarHeaderBlock.padding(after: stored))
            case UInt8(ascii: "g"):
                // Global records: Keepsake writes none, and none would change what it restores.
                current = Content(unread: stored, padding: TarHeaderBlock.padding(after: stored))
            default:
                let entry = try header(view, stored: stored, extended: extended ?? PaxExtendedHeader())
                extended = nil
                // Entries without a usable name cannot be restored or listed; skip them.
                if let entry { return entry }
            }
        }
    }

    /// The next piece of the current entry's content and where it goes in the file (offsets
    /// jump over a sparse file's holes); nil at the entry's end. The bytes stay valid until
    /// the next call.
    func nextBlock() throws -> (bytes: UnsafeRawBufferPointer, offset: Int64)? {
        while current.runIndex < current.runs.count {
            let run = current.runs[current.runIndex]
            let left = run.length - current.doneInRun
            guard left > 0 else {
                current.runIndex += 1
                current.doneInRun = 0
                continue
            }
            let piece = try input.next(upTo: Int(min(left, 1 << 30)))
            guard !piece.isEmpty else { throw damaged("it ends inside an entry's content") }
            defer {
                current.doneInRun += Int64(piece.count)
                current.unread -= Int64(piece.count)
            }
            return (piece, run.offset + current.doneInRun)
        }
        return nil
    }

    /// Passes over what is left of the current entry's content.
    func skipContent() throws {
        // One after the other: a size near 2^63 plus its padding would not fit.
        let (unread, padding) = (current.unread, current.padding)
        current = Content()
        guard try input.skip(unread) == unread, try input.skip(padding) == padding else {
            throw damaged("it ends inside an entry's content")
        }
    }

    // MARK: Headers

    /// The entry `view` describes, with `extended`'s records over its fields; its content is
    /// set up to be read. Nil when it has no name.
    private func header(_ view: UstarHeaderView, stored ustarSize: Int64, extended: PaxExtendedHeader) throws -> ArchiveEntryHeader? {
        guard let mode = view.number(.mode), let ustarUID = view.number(.uid), let ustarGID = view.number(.gid),
              let ustarTime = view.number(.mtime) else {
            throw damaged("a tar header's mode, owner or time is not a number")
        }
        // Everything is taken from the block before reading on (a sparse map): the view is
        // valid only until then.
        var name = extended.sparseName.flatMap { $0.isEmpty ? nil : $0 } ?? extended.path.flatMap { $0.isEmpty ? nil : $0 } ?? view.name
        let link = extended.linkPath.flatMap { $0.isEmpty ? nil : $0 } ?? view.link
        let flag = view.typeFlag
        let userName = ownerName(extended.userName, view.userName)
        let groupName = ownerName(extended.groupName, view.groupName)
        let devices = flag == UInt8(ascii: "3") || flag == UInt8(ascii: "4")
        let major = extended.deviceMajor ?? (devices ? view.number(.deviceMajor) ?? 0 : 0)
        let minor = extended.deviceMinor ?? (devices ? view.number(.deviceMinor) ?? 0 : 0)
        var type: EntryType
        switch flag {
        case UInt8(ascii: "0"), 0, UInt8(ascii: "7"):
            // A regular file whose name ends in `/` is a folder (the old tar convention).
            type = name.last == UInt8(ascii: "/") ? .directory : .file
        case UInt8(ascii: "1"): type = link.isEmpty ? .file : .hardlink
        case UInt8(ascii: "2"): type = .symlink
        case UInt8(ascii: "3"): type = .characterDevice
        case UInt8(ascii: "4"): type = .blockDevice
        case UInt8(ascii: "5"): type = .directory
        case UInt8(ascii: "6"): type = .fifo
        default:
            throw damaged("an entry has type \(Self.describe(flag)), which Keepsake does not write")
        }
        // Only files and hard links have content; the others' size field is not read, as
        // libarchive did not (a pax size record still says what follows). What a folder
        // named as a file holds is passed over.
        let fileFlag = flag == UInt8(ascii: "0") || flag == 0 || flag == UInt8(ascii: "7")
        let stored = extended.storedSize ?? (fileFlag || flag == UInt8(ascii: "1") ? ustarSize : 0)
        var size = type == .file || type == .hardlink ? stored : 0
        current = Content(unread: stored, padding: TarHeaderBlock.padding(after: stored))
        if let version = extended.sparseVersion {
            guard fileFlag else { throw damaged("an entry that is not a file has a sparse map") }
            guard version.major == 1, version.minor == 0, let realSize = extended.sparseRealSize else {
                throw damaged("a sparse file in a form Keepsake does not write")
            }
            try readSparseMap(realSize: realSize)
            if type == .file { size = realSize }
        } else if extended.sparseName != nil || extended.sparseRealSize != nil {
            throw damaged("a sparse file in a form Keepsake does not write")
        } else {
            current.runs = [ArchiveEntryHeader.SparseRegion(offset: 0, length: stored)]
        }
        if type != .file { current.runs = [] }

        while name.count > 1 && name.last == UInt8(ascii: "/") { name.removeLast() }
        guard !name.isEmpty else { return nil }
        let time = extended.mtime ?? (ustarTime, 0)
        // xattrs in the order they were given to the writer, which stored them newest first
        // (as libarchive's list held them, and as libarchive's reader turns them back).
        return ArchiveEntryHeader(
            path: name, type: type, size: size, permissions: UInt32(truncatingIfNeeded: mode) & 0o7777,
            uid: UInt32(clamping: extended.uid ?? ustarUID), gid: UInt32(clamping: extended.gid ?? ustarGID),
            userName: userName, groupName: groupName,
            mtimeSeconds: time.seconds, mtimeNanoseconds: time.nanoseconds,
            linkTarget: type == .symlink || type == .hardlink ? link : nil,
            rdev: Self.deviceNumber(major: major, minor: minor), xattrs: extended.xattrs.reversed())
    }

    /// An owner name as text: the pax record when it has one, the ustar field otherwise; nil
    /// when empty or not UTF-8.
    private func ownerName(_ record: [UInt8]?, _ field: [UInt8]) -> String? {
        let bytes = record.flatMap { $0.isEmpty ? nil : $0 } ?? field
        guard !bytes.isEmpty else { return nil }
        if let known = ownerNames.first(where: { $0.bytes == bytes }) { return known.text }
        let text = PathBytes.validString(bytes)
        if ownerNames.count == 4 { ownerNames.removeFirst() }
        ownerNames.append((bytes, text))
        return text
    }

    /// A device number from its parts, as glibc's `makedev` builds it.
    static func deviceNumber(major: Int64, minor: Int64) -> UInt64 {
        let major = UInt64(UInt32(truncatingIfNeeded: major))
        let minor = UInt64(UInt32(truncatingIfNeeded: minor))
        return (major & 0xfff) << 8 | (major & 0xffff_f000) << 32 | (minor & 0xff) | (minor & 0xffff_ff00) << 12
    }

    private static func describe(_ flag: UInt8) -> String {
        (0x21...0x7e).contains(flag) ? "'\(Character(Unicode.Scalar(flag)))'" : "byte \(flag)"
    }

    // MARK: Sparse files

    /// Reads the GNU 1.0 sparse map at the start of the content (decimal numbers, one a line:
    /// how many runs, then each run's offset and length, padded to a block) and sets the
    /// content up as those runs. The runs must be in order, within `realSize`, and hold
    /// exactly the bytes stored after the map.
    private func readSparseMap(realSize: Int64) throws {
        guard realSize >= 0 else { throw damaged("a sparse file's size is negative") }
        var numbers = SparseMapNumbers()
        var mapBytes: Int64 = 0
        var runs: [ArchiveEntryHeader.SparseRegion] = []
        var expected: Int?
        var end: Int64 = 0
        var pendingOffset: Int64?
        while expected.map({ runs.count < $0 }) ?? true {
            guard current.unread - mapBytes >= Int64(TarHeaderBlock.size) else { throw damaged("a sparse map runs past its entry") }
            let block = try input.contiguous(TarHeaderBlock.size)
            guard block.count == TarHeaderBlock.size else { throw damaged("it ends inside a sparse map") }
            mapBytes += Int64(block.count)
            for byte in block {
                if let count = expected, runs.count == count { break }
                guard let number = try numbers.take(byte, damaged: damaged) else { continue }
                guard expected != nil else {
                    guard number <= Int64(ArchiveEntryHeader.mostSparseRuns) else { throw damaged("a sparse map has more than \(ArchiveEntryHeader.mostSparseRuns) runs") }
                    expected = Int(number)
                    runs.reserveCapacity(Int(number))
                    continue
                }
                guard let offset = pendingOffset else {
                    pendingOffset = number
                    continue
                }
                pendingOffset = nil
                let (runEnd, overflow) = offset.addingReportingOverflow(number)
                guard offset >= end, !overflow, runEnd <= realSize else {
                    throw damaged("a sparse map's runs overlap or go past the file's size")
                }
                runs.append(ArchiveEntryHeader.SparseRegion(offset: offset, length: number))
                end = runEnd
            }
        }
        let data = runs.reduce(Int64(0)) { $0 + $1.length }
        guard data == current.unread - mapBytes else {
            throw damaged("a sparse map does not match the bytes stored")
        }
        current.unread = data
        current.runs = runs
    }

    private func damaged(_ reason: String) -> ArchiveError {
        .damaged(archive: name, reason: reason)
    }
}

/// The decimal numbers of a sparse map, one a line, fed a byte at a time.
private struct SparseMapNumbers {
    private var value: Int64 = 0
    private var digits = 0

    /// The number a newline ends; nil for a digit; throws on anything else.
    mutating func take(_ byte: UInt8, damaged: (String) -> ArchiveError) throws -> Int64? {
        if byte == UInt8(ascii: "\n") {
            guard digits > 0 else { throw damaged("a sparse map has an empty line") }
            defer { value = 0; digits = 0 }
            return value
        }
        guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 18 else {
            throw damaged("a sparse map holds something other than numbers")
        }
        value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        digits += 1
        return nil
    }
}
