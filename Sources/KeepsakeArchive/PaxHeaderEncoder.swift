import KeepsakeSupport

/// Encodes an entry's headers in the POSIX pax format: a ustar header, preceded by a pax
/// extended header (`x`) when the entry has something ustar cannot say (a long or non-ASCII
/// name, nanoseconds, a large id, extended attributes, holes).
///
/// Keepsake's archives were written by libarchive 3.6's pax writer until it cost a sixth of
/// a backup's instructions per entry (it clones every entry and converts every name). This
/// encoder writes the same bytes, the same records in the same order, for every entry
/// Keepsake makes; `PaxHeaderEncoderTests` compares the two. It differs in three places, all
/// on purpose, where libarchive lost information: a time between -1 and 0 seconds keeps its
/// sign (`-0.5`, where libarchive wrote `0.5`); a name in CESU-8 is stored as it is, marked
/// binary (libarchive rewrote it as UTF-8, so the restored name differed); a sparse file's
/// long name that is not UTF-8 goes whole into `GNU.sparse.name` (libarchive wrote the
/// shortened ustar name there, under which readers restored the file).
struct PaxHeaderEncoder {
    // MARK: Result

    /// How the entry's content follows its headers.
    struct ContentLayout {
        /// The bytes the caller writes: the file's size, holes included (zero for anything
        /// but a regular file).
        let logicalSize: Int64
        /// The runs of that content stored in the archive, in order; holes between them are
        /// dropped. One run of the whole file for a dense file.
        let storedRegions: [ArchiveEntryHeader.SparseRegion]
        /// Bytes of content stored (the sum of the runs), which the entry pads to a block.
        let storedBytes: Int64
    }

    // MARK: State

    /// The pax records of the entry being encoded, reused from entry to entry.
    private var records: [UInt8] = []

    // MARK: Encoding

    /// Appends the headers of `header` to `output` (and, for a sparse file, its map of runs)
    /// and says how its content is to be written. Throws for what no tar header can carry: a
    /// socket, a NUL byte in a name, a negative size.
    mutating func encode(_ header: ArchiveEntryHeader, into output: inout [UInt8]) throws -> ContentLayout {
        let display = { PathBytes.display(header.path) }
        guard header.type != .socket else {
            throw ArchiveError.write(path: display(), reason: "a socket cannot be stored in a tar archive")
        }
        guard !header.path.isEmpty else { throw ArchiveError.write(path: "''", reason: "an entry needs a name") }
        guard !header.path.contains(0) else {
            throw ArchiveError.write(path: display(), reason: "\(PathBytes.EmbeddedNUL(path: header.path))")
        }
        let link: [UInt8]? = header.type == .symlink || header.type == .hardlink ? header.linkTarget ?? [] : nil
        if let link, link.contains(0) {
            throw ArchiveError.write(path: display(), reason: "\(PathBytes.EmbeddedNUL(path: link))")
        }
        if header.type == .hardlink && link?.isEmpty != false {
            throw ArchiveError.write(path: display(), reason: "a hard link needs the path it links to")
        }
        guard header.type != .file || header.size >= 0 else {
            throw ArchiveError.write(path: display(), reason: "its size is negative (\(header.size))")
        }

        var path = header.path
        if header.type == .directory && path.last != UInt8(ascii: "/") { path.append(UInt8(ascii: "/")) }
        records.removeAll(keepingCapacity: true)

        // Names: UTF-8 unless one is not, then all are binary; the ustar fields get a form
        // that fits, and the real one goes in a record.
        if !Self.isUTF8(path) || !(link.map(Self.isUTF8) ?? true) { addRecord("hdrcharset", "BINARY".utf8) }
        var ustarName = path
        if Self.hasNonASCII(path) || (path.count > 100 && TarHeaderBlock.splitPoint(of: path[...]) == nil) {
            addRecord("path", path)
            ustarName = UstarNameFit.shortened(path[...])
        }
        var ustarLink = link ?? []
        if let link, link.count > 100 || Self.hasNonASCII(link) {
            addRecord("linkpath", link)
            if link.count > 100 { ustarLink = Array((header.type == .hardlink ? "././@LongHardLink" : "././@LongSymLink").utf8) }
        }

        // Owners: ustar holds ids below 2^18 and names of 31 ASCII bytes.
        let userName = Array((header.userName ?? "").utf8)
        let groupName = Array((header.groupName ?? "").utf8)
        if header.gid >= 1 << 18 { addRecord("gid", Self.decimal(Int64(header.gid))) }
        if groupName.count > 31 || Self.hasNonASCII(groupName) { addRecord("gname", groupName) }
        if header.uid >= 1 << 18 { addRecord("uid", Self.decimal(Int64(header.uid))) }
        if userName.count > 31 || Self.hasNonASCII(userName) { addRecord("uname", userName) }

        let isDevice = header.type == .blockDevice || header.type == .characterDevice
        let major = Self.major(header.rdev)
        let minor = Self.minor(header.rdev)
        if isDevice {
            if Int32(bitPattern: major) >= 1 << 18 { addRecord("SCHILY.devmajor", Self.decimal(Int64(Int32(bitPattern: major)))) }
            if Int32(bitPattern: minor) >= 1 << 18 { addRecord("SCHILY.devminor", Self.decimal(Int64(Int32(bitPattern: minor)))) }
        }

        // Time: whole seconds toward zero in the ustar field (as libarchive held them), the
        // exact time in a record when ustar cannot hold it.
        let seconds = header.mtimeSeconds < 0 && header.mtimeNanoseconds > 0 ? header.mtimeSeconds + 1 : header.mtimeSeconds
        if seconds < 0 || seconds >= 0x7fff_ffff || header.mtimeNanoseconds != 0 {
            addRecord("mtime", Self.timeText(seconds: header.mtimeSeconds, nanoseconds: header.mtimeNanoseconds))
        }

        // Content: a regular file's bytes, or its runs of data in GNU's sparse format 1.0.
        let logicalSize = header.type == .file ? header.size : 0
        var storedRegions = logicalSize > 0 ? [ArchiveEntryHeader.SparseRegion(offset: 0, length: logicalSize)] : []
        var storedBytes = logicalSize
        var sparseMap: [UInt8] = []
        let entryName = ustarName
        if header.type == .file, let regions = Self.sparseRuns(header.sparseRegions, size: logicalSize) {
            addRecord("GNU.sparse.major", "1".utf8)
            addRecord("GNU.sparse.minor", "0".utf8)
            addRecord("GNU.sparse.name", path)
            addRecord("GNU.sparse.realsize", Self.decimal(logicalSize))
            ustarName = UstarNameFit.sparseFileName(for: entryName[...])
            sparseMap = Self.decimal(Int64(regions.count)) + [0x0a]
            storedBytes = 0
            for region in regions {
                sparseMap += Self.decimal(region.offset) + [0x0a] + Self.decimal(region.length) + [0x0a]
                storedBytes += region.length
            }
            storedRegions = regions.filter { $0.length > 0 }
        }

        // Extended attributes, newest first as libarchive's list held them; the name is
        // percent-encoded so that it holds no `=`.
        for attribute in header.xattrs.reversed() {
            addRecord(Array("SCHILY.xattr.".utf8) + PaxXattrName.encoded(attribute.name), attribute.value)
        }

        let mapSize = Int64(sparseMap.count)
        let ustarSize = (sparseMap.isEmpty ? 0 : mapSize + TarHeaderBlock.padding(after: mapSize)) + storedBytes
        if ustarSize >= 1 << 33 { addRecord("size", Self.decimal(ustarSize)) }

        if !records.isEmpty {
            let block = TarHeaderBlock(appendingTo: &output)
            block.setType(UInt8(ascii: "x"), in: &output)
            block.setName(UstarNameFit.paxHeaderName(for: entryName[...])[...], in: &output)
            block.setNumber(Int64(records.count), .size, strict: true, in: &output)
            block.setNumber(Int64(min(header.uid, (1 << 18) - 1)), .uid, strict: true, in: &output)
            block.setNumber(Int64(min(header.gid, (1 << 18) - 1)), .gid, strict: true, in: &output)
            block.setNumber(Int64(header.permissions & 0o777), .mode, strict: true, in: &output)
            block.setOwnerNames(user: userName[...], group: groupName[...], in: &output)
            block.setNumber(min(max(seconds, 0), 0x7fff_ffff), .mtime, strict: true, in: &output)
            block.seal(in: &output)
            Self.appendPadded(records, to: &output)
        }

        let block = TarHeaderBlock(appendingTo: &output)
        block.setType(Self.typeFlag(header.type), in: &output)
        block.setName(ustarName[...], in: &output)
        block.setLink(ustarLink[...], in: &output)
        block.setOwnerNames(user: userName[...], group: groupName[...], in: &output)
        block.setNumber(Int64(header.permissions & 0o7777), .mode, strict: false, in: &output)
        block.setNumber(Int64(header.uid), .uid, strict: false, in: &output)
        block.setNumber(Int64(header.gid), .gid, strict: false, in: &output)
        block.setNumber(ustarSize, .size, strict: false, in: &output)
        block.setNumber(seconds, .mtime, strict: false, in: &output)
        if isDevice {
            block.setNumber(Int64(major), .deviceMajor, strict: false, in: &output)
            block.setNumber(Int64(minor), .deviceMinor, strict: false, in: &output)
        }
        block.seal(in: &output)
        if !sparseMap.isEmpty { Self.appendPadded(sparseMap, to: &output) }
        return ContentLayout(logicalSize: logicalSize, storedRegions: storedRegions, storedBytes: storedBytes)
    }

    // MARK: Records

    /// Appends `<length> <key>=<value>\n`, where the length counts the whole record, its own
    /// digits included.
    private mutating func addRecord(_ key: String, _ value: some Collection<UInt8>) {
        addRecord(Array(key.utf8), value)
    }

    private mutating func addRecord(_ key: [UInt8], _ value: some Collection<UInt8>) {
        let body = 1 + key.count + 1 + value.count + 1
        var digits = 0
        var power = 1
        var rest = body
        while rest > 0 {
            rest /= 10
            digits += 1
            power *= 10
        }
        if body + digits >= power { digits += 1 }
        records.append(contentsOf: Self.decimal(Int64(body + digits)))
        records.append(UInt8(ascii: " "))
        records.append(contentsOf: key)
        records.append(UInt8(ascii: "="))
        records.append(contentsOf: value)
        records.append(0x0a)
    }

    // MARK: Values

    /// The data runs that make a file sparse, as libarchive kept them: runs that are invalid,
    /// overlap or pass the end are dropped, touching runs are joined, and a run that ends
    /// before the file does is followed by an empty run at the end. Nil when the file is dense
    /// (no runs, or one run of all of it).
    private static func sparseRuns(_ regions: [ArchiveEntryHeader.SparseRegion],
                                   size: Int64) -> [ArchiveEntryHeader.SparseRegion]? {
        guard !regions.isEmpty else { return nil }
        var runs: [ArchiveEntryHeader.SparseRegion] = []
        for region in regions {
            guard region.offset >= 0, region.length >= 0, region.offset <= Int64.max - region.length,
                  region.offset + region.length <= size else { continue }
            if let last = runs.last {
                let end = last.offset + last.length
                if end > region.offset { continue }
                if end == region.offset {
                    runs[runs.count - 1].length += region.length
                    continue
                }
            }
            runs.append(region)
        }
        if runs.isEmpty { return nil }
        if runs.count == 1 && runs[0].offset == 0 && runs[0].length >= size { return nil }
        if let last = runs.last, last.offset + last.length < size {
            runs.append(.init(offset: size, length: 0))
        }
        // More runs than a reader should hold in memory: stored whole instead.
        return runs.count <= ArchiveEntryHeader.mostSparseRuns ? runs : nil
    }

    /// The pax text of a time: seconds, and a fraction without trailing zeros.
    static func timeText(seconds: Int64, nanoseconds: Int32) -> [UInt8] {
        var whole = seconds
        var fraction = Int64(nanoseconds)
        var negative = false
        if seconds < 0 && nanoseconds > 0 {
            // -99.75 is held as (-100, 0.25 s): the text counts toward zero.
            negative = true
            whole = -(seconds + 1)
            fraction = 1_000_000_000 - fraction
        }
        var text = (negative ? [UInt8(ascii: "-")] : []) + decimal(whole)
        if fraction > 0 {
            var digits = [UInt8](repeating: UInt8(ascii: "0"), count: 9)
            var rest = fraction
            for index in stride(from: 8, through: 0, by: -1) {
                digits[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            while digits.last == UInt8(ascii: "0") { digits.removeLast() }
            text.append(UInt8(ascii: "."))
            text.append(contentsOf: digits)
        }
        return text
    }

    /// Decimal digits, with a `-` when negative.
    static func decimal(_ value: Int64) -> [UInt8] {
        Array(String(value).utf8)
    }

    private static func typeFlag(_ type: EntryType) -> UInt8 {
        switch type {
        case .file: return UInt8(ascii: "0")
        case .hardlink: return UInt8(ascii: "1")
        case .symlink: return UInt8(ascii: "2")
        case .characterDevice: return UInt8(ascii: "3")
        case .blockDevice: return UInt8(ascii: "4")
        case .directory: return UInt8(ascii: "5")
        case .fifo, .socket: return UInt8(ascii: "6")
        }
    }

    /// glibc's `major()` and `minor()` of a device number.
    private static func major(_ device: UInt64) -> UInt32 {
        UInt32(truncatingIfNeeded: (device >> 8) & 0xfff) | (UInt32(truncatingIfNeeded: device >> 32) & ~0xfff)
    }

    private static func minor(_ device: UInt64) -> UInt32 {
        UInt32(truncatingIfNeeded: device & 0xff) | (UInt32(truncatingIfNeeded: device >> 12) & ~0xff)
    }

    /// Appends `bytes` and the zeros that fill their last block.
    private static func appendPadded(_ bytes: [UInt8], to output: inout [UInt8]) {
        output.append(contentsOf: bytes)
        output.appendZeros(Int(TarHeaderBlock.padding(after: Int64(bytes.count))))
    }

    private static func hasNonASCII(_ bytes: [UInt8]) -> Bool {
        bytes.contains { $0 >= 0x80 }
    }

    private static func isUTF8(_ bytes: [UInt8]) -> Bool {
        !hasNonASCII(bytes) || PathBytes.validString(bytes) != nil
    }
}
