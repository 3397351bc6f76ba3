import BackupCore
import Foundation
import KeepsakeSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Seeded randomness

/// SplitMix64: a tiny seeded generator, so every run damages exactly the same offsets and a
/// failure can be replayed from the printed seed, file and offset.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

// MARK: - Damage

/// One deliberate injury to one file of a backup: a single flipped bit or a truncation.
struct Damage: Sendable, CustomStringConvertible {
    /// Which of the backup's two files is damaged, and how it is seen.
    enum Target: String, Sendable {
        /// The archive's bytes.
        case archive
        /// The manifest's plain JSON lines, compressed again (with `zstd`) after the damage:
        /// a manifest whose content is wrong but whose compression is sound.
        case manifest
        /// The manifest's compressed bytes as stored.
        case storedManifest = "stored manifest"
    }

    /// What is done to it.
    enum Kind: Sendable {
        /// Bit `bit` (0 = least significant) of the byte at `offset` is inverted.
        case bitFlip(offset: Int, bit: Int)
        /// The file is cut to `length` bytes.
        case truncation(length: Int)
    }

    let target: Target
    let kind: Kind

    /// The damaged copy of `bytes`.
    func apply(to bytes: [UInt8]) -> [UInt8] {
        switch kind {
        case .bitFlip(let offset, let bit):
            var copy = bytes
            copy[offset] ^= UInt8(1) << UInt8(bit)
            return copy
        case .truncation(let length):
            return Array(bytes.prefix(length))
        }
    }

    var description: String {
        switch kind {
        case .bitFlip(let offset, let bit): return "\(target.rawValue) bit flip at offset \(offset) bit \(bit)"
        case .truncation(let length): return "\(target.rawValue) truncated to \(length) bytes"
        }
    }

    /// How many of `count` random damages a plan makes: every one, or a third of them (one at
    /// least) when the binary runs under a sanitizer, which makes each of these hundreds of
    /// runs several times slower. The
    /// kinds and places of damage stay the same; the plain run makes them all, and the fuzz
    /// targets feed the readers far more damaged inputs under ASan.
    static func planned(_ count: Int) -> Int {
        KeepsakeTestCase.runsUnderSanitizer ? max(1, count / 3) : count
    }

    /// `count` single-bit flips at uniformly random offsets of a file of `size` bytes (see `planned`).
    static func randomFlips(_ count: Int, in target: Target, size: Int, using generator: inout SeededGenerator) -> [Damage] {
        (0..<planned(count)).map { _ in
            Damage(target: target, kind: .bitFlip(offset: Int.random(in: 0..<size, using: &generator),
                                                  bit: Int.random(in: 0..<8, using: &generator)))
        }
    }

    /// `count` single-bit flips at random offsets inside `range` (see `planned`).
    static func randomFlips(_ count: Int, in target: Target, range: Range<Int>, using generator: inout SeededGenerator) -> [Damage] {
        (0..<planned(count)).map { _ in
            Damage(target: target, kind: .bitFlip(offset: Int.random(in: range, using: &generator),
                                                  bit: Int.random(in: 0..<8, using: &generator)))
        }
    }

    /// `count` truncations to random lengths shorter than `size` (0 included; see `planned`).
    static func randomTruncations(_ count: Int, in target: Target, size: Int, using generator: inout SeededGenerator) -> [Damage] {
        (0..<planned(count)).map { _ in
            Damage(target: target, kind: .truncation(length: Int.random(in: 0..<size, using: &generator)))
        }
    }
}

// MARK: - Tar layout

/// Where each byte of an uncompressed tar archive belongs, so a flip can be attributed to
/// the entry (and the part of it) it lands in.
struct TarLayout: Sendable {
    /// The part of the archive a byte belongs to.
    enum Region: Sendable, Equatable, CustomStringConvertible {
        /// A 512-byte ustar header (the entry's archive path).
        case header(String)
        /// Part of the pax extended header describing the entry: its own ustar block, one
        /// record (`record "mtime"`), or its padding.
        case paxHeader(String, part: String)
        /// A regular file's content.
        case content(String)
        /// Zero padding that rounds an entry up to 512 bytes.
        case padding(String)
        /// The end-of-archive zero blocks and the record padding after them.
        case endOfArchive

        /// A short name for grouping ("content", "header", …).
        var kind: String {
            switch self {
            case .header: return "tar header"
            case .paxHeader: return "pax header"
            case .content: return "file content"
            case .padding: return "block padding"
            case .endOfArchive: return "end-of-archive blocks"
            }
        }

        /// The region in words: "pax header (record "mtime") of PATH", "file content of PATH".
        var description: String {
            if case .paxHeader(let path, let part) = self { return "pax header (\(part)) of \(path)" }
            return path.map { "\(kind) of \($0)" } ?? kind
        }

        /// The archive path of the entry, if the region belongs to one.
        var path: String? {
            switch self {
            case .header(let path), .paxHeader(let path, _), .content(let path), .padding(let path):
                return path
            case .endOfArchive: return nil
            }
        }
    }

    private var spans: [(range: Range<Int>, region: Region)] = []

    /// Parses the blocks of `bytes` (an uncompressed POSIX tar archive).
    init(_ bytes: [UInt8]) {
        var position = 0
        var paxPath: String?
        var paxParts: [(range: Range<Int>, part: String)] = []
        while position + 512 <= bytes.count {
            let block = Array(bytes[position..<position + 512])
            if block.allSatisfy({ $0 == 0 }) {
                spans.append((position..<bytes.count, .endOfArchive))
                return
            }
            let size = TarLayout.octal(block[124..<136])
            let type = block[156]
            let padded = (size + 511) / 512 * 512
            let contentStart = position + 512
            if type == UInt8(ascii: "x") || type == UInt8(ascii: "g") {
                let records = Array(bytes[contentStart..<min(bytes.count, contentStart + size)])
                paxPath = TarLayout.paxValue("path", in: records)
                paxParts.append((position..<contentStart, "ustar block"))
                paxParts += TarLayout.paxRecordRanges(records).map {
                    ($0.range.shifted(by: contentStart), "record \"\($0.key)\"")
                }
                if padded > size { paxParts.append((contentStart + size..<contentStart + padded, "padding")) }
                position = contentStart + padded
                continue
            }
            let prefix = TarLayout.string(block[345..<500])
            let name = TarLayout.string(block[0..<100])
            let path = paxPath ?? (prefix.isEmpty ? name : prefix + "/" + name)
            for pax in paxParts { spans.append((pax.range, .paxHeader(path, part: pax.part))) }
            spans.append((position..<contentStart, .header(path)))
            let isRegular = type == UInt8(ascii: "0") || type == 0
            let stored = isRegular ? size : 0
            if stored > 0 { spans.append((contentStart..<contentStart + stored, .content(path))) }
            if padded > stored { spans.append((contentStart + stored..<contentStart + padded, .padding(path))) }
            position = contentStart + (isRegular ? padded : 0)
            paxPath = nil
            paxParts = []
        }
        if position < bytes.count { spans.append((position..<bytes.count, .endOfArchive)) }
    }

    /// The region holding the byte at `offset`.
    func region(at offset: Int) -> Region {
        spans.first { $0.range.contains(offset) }?.region ?? .endOfArchive
    }

    /// The region holding the byte at `offset` in words, with the ustar field for a byte of
    /// a 512-byte header block ("tar header of PATH, field mtime").
    func describe(_ offset: Int) -> String {
        guard let span = spans.first(where: { $0.range.contains(offset) }) else { return Region.endOfArchive.description }
        switch span.region {
        case .header, .paxHeader(_, "ustar block"):
            return span.region.description + ", field " + TarLayout.ustarField(at: offset - span.range.lowerBound)
        default:
            return span.region.description
        }
    }

    /// The name of the ustar header field holding byte `index` (0–511) of a header block.
    static func ustarField(at index: Int) -> String {
        let fields: [(end: Int, name: String)] = [
            (100, "name"), (108, "mode"), (116, "uid"), (124, "gid"), (136, "size"), (148, "mtime"), (156, "chksum"),
            (157, "typeflag"), (257, "linkname"), (263, "magic"), (265, "version"), (297, "uname"), (329, "gname"),
            (337, "devmajor"), (345, "devminor"), (500, "prefix"), (512, "padding"),
        ]
        return fields.first { index < $0.end }?.name ?? "?"
    }

    /// The byte ranges of every regular file's content, by archive path.
    var contentRanges: [String: Range<Int>] {
        var ranges: [String: Range<Int>] = [:]
        for span in spans {
            if case .content(let path) = span.region { ranges[path] = span.range }
        }
        return ranges
    }

    private static func octal(_ field: ArraySlice<UInt8>) -> Int {
        var value = 0
        for byte in field where byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "7") {
            value = value * 8 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    private static func string(_ field: ArraySlice<UInt8>) -> String {
        String(decoding: field.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// The byte range (within `records`) and key of every pax record.
    private static func paxRecordRanges(_ records: [UInt8]) -> [(range: Range<Int>, key: String)] {
        var result: [(range: Range<Int>, key: String)] = []
        var index = 0
        while index < records.count {
            guard let space = records[index...].firstIndex(of: UInt8(ascii: " ")) else { break }
            let length = Int(String(decoding: records[index..<space], as: UTF8.self)) ?? 0
            guard length > 0, index + length <= records.count else { break }
            let record = records[(space + 1)..<(index + length)]
            let key = record.firstIndex(of: UInt8(ascii: "=")).map { String(decoding: record[record.startIndex..<$0], as: UTF8.self) }
            result.append((index..<(index + length), key ?? "?"))
            index += length
        }
        return result
    }

    /// The value of `key` in pax records (`LEN key=value\n`).
    private static func paxValue(_ key: String, in records: [UInt8]) -> String? {
        var index = 0
        while index < records.count {
            guard let space = records[index...].firstIndex(of: UInt8(ascii: " ")) else { return nil }
            let length = Int(String(decoding: records[index..<space], as: UTF8.self)) ?? 0
            guard length > 0, index + length <= records.count else { return nil }
            let record = records[(space + 1)..<(index + length - 1)]
            if let equals = record.firstIndex(of: UInt8(ascii: "=")),
               String(decoding: record[record.startIndex..<equals], as: UTF8.self) == key {
                return String(decoding: record[(equals + 1)...], as: UTF8.self)
            }
            index += length
        }
        return nil
    }
}

private extension Range where Bound == Int {
    /// The range moved by `offset`.
    func shifted(by offset: Int) -> Range<Int> { (lowerBound + offset)..<(upperBound + offset) }
}

// MARK: - The corpus

/// One source tree of the corpus.
struct CorpusTree: Sendable {
    /// "small" or "big".
    let name: String
    /// The tree's absolute path.
    let root: String
    /// Every regular file, relative to `root`, sorted.
    let files: [String]

    /// The archive path of a file of this tree (its absolute path without the leading `/`).
    func archivePath(of relative: String) -> String { String(root.dropFirst()) + "/" + relative }
}

/// One pristine backup of the corpus: its destination and the bytes of its two files.
struct CorpusBackup: Sendable {
    /// "small/zstd" and the like.
    let label: String
    let tree: CorpusTree
    let compression: String
    let id: String
    /// The destination the backup was made in (left untouched).
    let dest: String
    let archiveName: String
    let manifestName: String
    /// The pristine archive.
    let archive: [UInt8]
    /// The pristine manifest beside it, decompressed.
    let manifest: [UInt8]
    /// The pristine manifest beside it as stored (zstd).
    let storedManifest: [UInt8]
    /// The block layout, for an uncompressed archive.
    let layout: TarLayout?
    /// The decompressed tar stream and its layout (for diagnosing compressed damage).
    let tar: [UInt8]
    let tarLayout: TarLayout

    /// The pristine bytes of `target`.
    func bytes(of target: Damage.Target) -> [UInt8] {
        switch target {
        case .archive: return archive
        case .manifest: return manifest
        case .storedManifest: return storedManifest
        }
    }

    /// The byte range of the stored manifest's first zstd frame (the summary line's).
    var summaryFrameRange: Range<Int> {
        // Frame header: magic, descriptor, then (single segment) the content size; blocks
        // follow, each with a 3-byte header whose bit 0 marks the last; then a 4-byte checksum.
        let descriptor = storedManifest[4]
        let sizeBytes = [0, 2, 4, 8][Int(descriptor >> 6)], singleSegment = descriptor & 0x20 != 0
        let windowBytes = singleSegment ? 0 : 1, dictionaryBytes = [0, 1, 2, 4][Int(descriptor & 3)]
        var offset = 5 + windowBytes + dictionaryBytes + (singleSegment && sizeBytes == 0 ? 1 : sizeBytes)
        while offset + 3 <= storedManifest.count {
            let header = Int(storedManifest[offset]) | Int(storedManifest[offset + 1]) << 8 | Int(storedManifest[offset + 2]) << 16
            let blockType = (header >> 1) & 3, blockSize = header >> 3
            offset += 3 + (blockType == 1 ? 1 : blockSize)
            if header & 1 == 1 { break }
        }
        return 0..<min(storedManifest.count, offset + (descriptor & 4 != 0 ? 4 : 0))
    }

    /// The byte range of the manifest's first line (the summary), newline included.
    var summaryLineRange: Range<Int> {
        let end = manifest.firstIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? manifest.count
        return 0..<end
    }

    /// Where a damage lands, in words: the tar region for an uncompressed archive, the
    /// position for a compressed one, the line and JSON key for a manifest.
    func locate(_ damage: Damage) -> String {
        switch (damage.target, damage.kind) {
        case (.archive, .bitFlip(let offset, _)):
            if let layout { return layout.describe(offset) }
            return "\(percent(offset, of: archive.count)) into the \(compression) stream" + compressedFraming(offset)
        case (.archive, .truncation(let length)):
            return "\(percent(length, of: archive.count)) of the archive kept"
        case (.manifest, .bitFlip(let offset, let bit)):
            return manifestPosition(offset) + ", " + CorpusBackup.show(manifest[offset]) + " → "
                + CorpusBackup.show(manifest[offset] ^ (UInt8(1) << UInt8(bit)))
        case (.manifest, .truncation(let length)):
            return "cut in " + manifestPosition(min(length, manifest.count - 1))
        case (.storedManifest, .bitFlip(let offset, _)):
            return "\(percent(offset, of: storedManifest.count)) into the compressed manifest"
                + (summaryFrameRange.contains(offset) ? " (the summary line's frame)" : "")
        case (.storedManifest, .truncation(let length)):
            return "\(percent(length, of: storedManifest.count)) of the compressed manifest kept"
                + (length == summaryFrameRange.upperBound ? " (its summary line's frame)" : "")
        }
    }

    /// A grouping key for a damage's location: the tar region kind, or a quarter of the
    /// compressed stream (of the archive, for a truncation).
    func bucket(_ damage: Damage) -> String {
        guard damage.target == .archive else { return damage.target.rawValue }
        guard case .bitFlip(let offset, _) = damage.kind else {
            guard case .truncation(let length) = damage.kind else { return "archive" }
            let quarter = min(3, length * 4 / max(1, archive.count))
            return "cut within \(quarter * 25)–\(quarter * 25 + 25)% of the archive"
        }
        if let layout {
            let region = layout.region(at: offset)
            if let path = region.path, path.hasPrefix(".keepsake/") { return "\(region.kind) of \(path)" }
            return region.kind
        }
        let quarter = min(3, offset * 4 / max(1, archive.count))
        return "\(quarter * 25)–\(quarter * 25 + 25)% of the stream"
    }

    private func percent(_ offset: Int, of size: Int) -> String {
        String(format: "%.1f%%", 100 * Double(offset) / Double(max(1, size)))
    }

    private func compressedFraming(_ offset: Int) -> String {
        if compression == "gzip" {
            if offset < 10 { return " (gzip header)" }
            if offset >= archive.count - 8 { return " (gzip trailer: CRC32/ISIZE)" }
        }
        if compression == "zstd", offset < 4 { return " (zstd magic number)" }
        return ""
    }

    /// "entry line 3 (tmp/…/f.txt), byte 57 of the line, in the key \"mode\"" and an excerpt with
    /// the hit byte in brackets, for a byte of the manifest.
    private func manifestPosition(_ offset: Int) -> String {
        let before = manifest[..<offset]
        let line = before.filter { $0 == UInt8(ascii: "\n") }.count
        let lineStart = before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
        let lineEnd = manifest[offset...].firstIndex(of: UInt8(ascii: "\n")) ?? manifest.count
        let text = String(decoding: manifest[lineStart..<lineEnd], as: UTF8.self)
        var what = line == 0 ? "summary line" : "entry line \(line)"
        if line > 0, let range = text.range(of: "\"path\":\"") {
            what += " (" + String(text[range.upperBound...].prefix { $0 != "\"" }) + ")"
        }
        let excerptStart = max(lineStart, offset - 20), excerptEnd = min(lineEnd, offset + 21)
        let excerpt = offset >= lineEnd ? "" : String(decoding: manifest[excerptStart..<offset], as: UTF8.self) + "["
            + String(decoding: [manifest[offset]], as: UTF8.self) + "]"
            + String(decoding: manifest[(offset + 1)..<max(offset + 1, excerptEnd)], as: UTF8.self)
        return "\(what), byte \(offset - lineStart) of the line, \(field(at: offset, lineStart: lineStart, lineEnd: lineEnd))"
            + (excerpt.isEmpty ? "" : " …\(excerpt)…")
    }

    /// Which JSON token of a manifest line holds the byte at `offset`: a key, a key's value,
    /// punctuation, or the newline.
    private func field(at offset: Int, lineStart: Int, lineEnd: Int) -> String {
        let quote = UInt8(ascii: "\""), colon = UInt8(ascii: ":"), backslash = UInt8(ascii: "\\")
        var index = lineStart
        var lastKey = "-"
        while index < lineEnd {
            let byte = manifest[index]
            guard byte == quote else {
                if index == offset {
                    return "{}[],:".utf8.contains(byte) ? "in the punctuation after the key \"\(lastKey)\""
                        : "in the value of \"\(lastKey)\""
                }
                index += 1
                continue
            }
            var end = index + 1
            while end < lineEnd && manifest[end] != quote { end += manifest[end] == backslash ? 2 : 1 }
            let isKey = end + 1 < lineEnd && manifest[end + 1] == colon
            let token = String(decoding: manifest[(index + 1)..<min(end, lineEnd)], as: UTF8.self)
            if (index...end).contains(offset) { return isKey ? "in the key \"\(token)\"" : "in the value of \"\(lastKey)\"" }
            if isKey { lastKey = token }
            index = end + 1
        }
        return "in the line's newline"
    }

    /// A byte as a character when printable, else `\xNN`.
    static func show(_ byte: UInt8) -> String {
        byte >= 0x20 && byte < 0x7f ? "'\(Character(UnicodeScalar(byte)))'" : String(format: "\\x%02x", byte)
    }
}

/// The trees and backups every corruption trial starts from: two trees (many small files,
/// a few big ones), each backed up with zstd, gzip and no compression into a destination of
/// its own. Built once per test class; trials damage copies, never these files.
final class CorruptionCorpus: Sendable {
    /// The folder holding everything (removed when the class finishes).
    let root: String
    let trees: [CorpusTree]
    let backups: [CorpusBackup]

    private init(root: String, trees: [CorpusTree], backups: [CorpusBackup]) {
        self.root = root
        self.trees = trees
        self.backups = backups
    }

    /// The compressions every tree is backed up with: the default and two for contrast.
    static let compressions = ["zstd", "gzip", "none"]

    /// Builds the trees and the six backups below a new temporary folder.
    static func build() throws -> CorruptionCorpus {
        var template = Array("/tmp/keepsake-corruption-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw RawFileSystem.Failure("mkdtemp", Array("/tmp/keepsake-corruption-XXXXXX".utf8))
        }
        let root = String(cString: made)
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(root + "/home"))
        let keepsake = KeepsakeProcess(executable: try KeepsakeProcess.locateBinary(), home: root + "/home")
        var generator = SeededGenerator(seed: 0x6B65_6570_7361_6B65)
        let trees = [try makeSmallTree(at: root + "/small", using: &generator),
                     try makeBigTree(at: root + "/big", using: &generator)]
        var backups: [CorpusBackup] = []
        for tree in trees {
            for compression in compressions {
                let dest = root + "/dest-\(tree.name)-\(compression)"
                let outcome = try keepsake.run(["backup", tree.root, "--dest", dest, "--json", "--compression", compression])
                guard outcome.exitCode == 0,
                      let object = try? JSONSerialization.jsonObject(with: outcome.stdout) as? [String: Any],
                      let id = object["id"] as? String else {
                    throw ProcessRunner.Failure(description: "the corpus backup failed:\n\(outcome)")
                }
                let names = try FileManager.default.contentsOfDirectory(atPath: dest).filter { $0.contains(id) }
                guard let archiveName = names.first(where: { $0.contains(".tar") }),
                      let manifestName = names.first(where: { $0.hasSuffix(".manifest.jsonl.zst") }) else {
                    throw ProcessRunner.Failure(description: "no archive and manifest for \(id) in \(dest): \(names)")
                }
                let archive = try RawFileSystem.readFile(RawFileSystem.bytes(dest + "/" + archiveName))
                let storedManifest = try RawFileSystem.readFile(RawFileSystem.bytes(dest + "/" + manifestName))
                let manifest = try decompress(dest + "/" + manifestName, compression: "zstd").bytes
                let tar = compression == "none" ? archive : try decompress(dest + "/" + archiveName, compression: compression).bytes
                backups.append(CorpusBackup(label: "\(tree.name)/\(compression)", tree: tree, compression: compression, id: id,
                                            dest: dest, archiveName: archiveName, manifestName: manifestName,
                                            archive: archive, manifest: manifest, storedManifest: storedManifest,
                                            layout: compression == "none" ? TarLayout(archive) : nil,
                                            tar: tar, tarLayout: TarLayout(tar)))
            }
        }
        return CorruptionCorpus(root: root, trees: trees, backups: backups)
    }

    /// The archive at `path` decompressed by the reference tool (`zstd -dc`, `gzip -dc`), and
    /// the tool's verdict (exit code and stderr).
    static func decompress(_ path: String, compression: String) throws -> (bytes: [UInt8], verdict: String) {
        let outcome = try ProcessRunner.run(compression == "zstd" ? "zstd" : "gzip", ["-dc", path])
        return (Array(outcome.stdout), "\(compression == "zstd" ? "zstd" : "gzip") -dc exit \(outcome.exitCode)"
            + (outcome.stderrText.isEmpty ? "" : " (" + outcome.stderrText.trimmingCharacters(in: .whitespacesAndNewlines) + ")"))
    }

    /// 200 files of 0–4 KiB (half text, half random bytes) in ten folders, with fixed
    /// modification times (so uncompressed archives lay out the same way every run).
    private static func makeSmallTree(at root: String, using generator: inout SeededGenerator) throws -> CorpusTree {
        var files: [String] = []
        for folder in 0..<10 {
            for index in 0..<20 {
                let isText = index % 2 == 0
                let relative = String(format: "folder-%02d/%@-%03d.%@", folder, isText ? "note" : "blob", index, isText ? "txt" : "bin")
                let size = Int.random(in: 0...4096, using: &generator)
                let contents = isText ? text(count: size, using: &generator)
                    : Fixtures.pseudoRandomBytes(count: size, seed: generator.next())
                try RawFileSystem.makeDirectory(RawFileSystem.bytes(root + "/" + String(format: "folder-%02d", folder)))
                try RawFileSystem.writeFile(RawFileSystem.bytes(root + "/" + relative), contents: contents)
                files.append(relative)
            }
        }
        try Fixtures.stampTimes(root: RawFileSystem.bytes(root))
        return CorpusTree(name: "small", root: root, files: files.sorted())
    }

    /// Three big files (1.25 MiB random, 1 MiB of log text, 300 KB random) and a small one,
    /// with fixed modification times.
    private static func makeBigTree(at root: String, using generator: inout SeededGenerator) throws -> CorpusTree {
        let contents: [(String, [UInt8])] = [
            ("big-random.bin", Fixtures.pseudoRandomBytes(count: 1_310_720, seed: generator.next())),
            ("logs/big-text.log", text(count: 1_048_576, using: &generator)),
            ("medium.bin", Fixtures.pseudoRandomBytes(count: 300_000, seed: generator.next())),
            ("readme.txt", Array("a few big files\n".utf8)),
        ]
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(root + "/logs"))
        for (relative, bytes) in contents {
            try RawFileSystem.writeFile(RawFileSystem.bytes(root + "/" + relative), contents: bytes)
        }
        try Fixtures.stampTimes(root: RawFileSystem.bytes(root))
        return CorpusTree(name: "big", root: root, files: contents.map(\.0).sorted())
    }

    /// `count` bytes of log-like text (compressible, but not trivially).
    private static func text(count: Int, using generator: inout SeededGenerator) -> [UInt8] {
        let words = ["backup", "restore", "verify", "archive", "manifest", "chain", "prune", "keep", "file", "folder",
                     "zstd", "gzip", "sha256", "error", "ok", "warning", "bytes", "host", "daily", "weekly"]
        var out: [UInt8] = []
        out.reserveCapacity(count + 64)
        var line = 0
        while out.count < count {
            out.append(contentsOf: "\(line) \(words[Int.random(in: 0..<words.count, using: &generator)]) ".utf8)
            out.append(contentsOf: "\(words[Int.random(in: 0..<words.count, using: &generator)]) \(generator.next() % 100_000)\n".utf8)
            line += 1
        }
        return Array(out.prefix(count))
    }
}

// MARK: - The base class

/// The base of the corruption tests: a corpus built once per class (on the first test's
/// setUp, removed in the class's tearDown), and helpers that stage a damaged copy of a
/// backup and run `verify` or `restore` on it.
class CorruptionTestCase: EndToEndTestCase {
    // MARK: Corpus

    /// One corpus per test class, built by the class's first test.
    private static let corpora = LockedValue<[ObjectIdentifier: CorruptionCorpus]>([:])

    /// This class's corpus.
    private(set) var corpus: CorruptionCorpus?

    override func setUpWithError() throws {
        try super.setUpWithError()
        let key = ObjectIdentifier(type(of: self))
        corpus = try Self.corpora.withLock { corpora -> CorruptionCorpus in
            if let built = corpora[key] { return built }
            let built = try CorruptionCorpus.build()
            corpora[key] = built
            return built
        }
    }

    override class func tearDown() {
        let key = ObjectIdentifier(self)
        let removed = corpora.withLock { $0.removeValue(forKey: key) }
        if let root = removed?.root, root.hasPrefix("/tmp/keepsake-corruption-") {
            _ = try? ProcessRunner.run("rm", ["-rf", "--one-file-system", root])
        }
        super.tearDown()
    }

    /// The corpus's backups (failing the test when the corpus is missing).
    func corpusBackups() throws -> [CorpusBackup] {
        try XCTUnwrap(corpus, "the corpus was not built").backups
    }

    // MARK: Staging

    /// Fills `dest` (created when missing) with `backup`'s archive and manifest, one of
    /// them damaged by `damage` (both pristine when nil); returns `dest`.
    @discardableResult
    func stage(_ backup: CorpusBackup, damage: Damage?, in dest: String) throws -> String {
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(dest), mode: 0o700)
        let archive = damage?.target == .archive ? damage!.apply(to: backup.archive) : backup.archive
        try RawFileSystem.writeFile(RawFileSystem.bytes(dest + "/" + backup.archiveName), contents: archive, mode: 0o600)
        let manifestPath = dest + "/" + backup.manifestName
        switch damage?.target {
        case .manifest?:
            // Damaged as text, then compressed soundly (as `zstd` would after a hand edit).
            let plain = dest + "/damaged-manifest.jsonl"
            try RawFileSystem.writeFile(RawFileSystem.bytes(plain), contents: damage!.apply(to: backup.manifest), mode: 0o600)
            let outcome = try ProcessRunner.run("zstd", ["-q", "-f", "--rm", plain, "-o", manifestPath])
            guard outcome.exitCode == 0 else { throw ProcessRunner.Failure(description: "zstd failed:\n\(outcome)") }
        case .storedManifest?:
            try RawFileSystem.writeFile(RawFileSystem.bytes(manifestPath), contents: damage!.apply(to: backup.storedManifest), mode: 0o600)
        case .archive?, nil:
            try RawFileSystem.writeFile(RawFileSystem.bytes(manifestPath), contents: backup.storedManifest, mode: 0o600)
        }
        return dest
    }

    // MARK: Verifying

    /// What one `keepsake verify --json` run said about one backup.
    struct VerifyVerdict {
        let outcome: ProcessRunner.Outcome
        /// The report for the backup, when the output has one.
        let report: [String: Any]?
        /// True when the report names the backup: by its id, or (a lone archive file whose
        /// manifest could not be read) by the archive's path.
        let namesBackup: Bool
        /// The damaged files it named.
        let damagedFiles: [String]
        /// Its archive-wide problems.
        let archiveProblems: [String]

        /// Exit 4, and a report naming the backup and saying it is not intact.
        var detected: Bool {
            outcome.exitCode == 4 && namesBackup && (report?["intact"] as? Bool) == false
        }

        /// A compact account for failure messages.
        var summary: String {
            "exit \(outcome.exitCode); report id \(report?["id"] ?? "none"), intact \(report?["intact"] ?? "none"); "
                + "archive problems \(archiveProblems); damaged files \(damagedFiles.prefix(3))"
                + (report == nil ? "\n" + outcome.description : "")
        }
    }

    /// Runs `keepsake verify ARGUMENTS --json` and picks the report about `backup` (the only
    /// one, or the one with its id). `archivePath` is the path given for a lone archive file.
    func verifyVerdict(_ arguments: [String], backup: CorpusBackup, archivePath: String? = nil,
                       environment: [String: String?] = [:]) throws -> VerifyVerdict {
        let outcome = try run(["verify"] + arguments + ["--json"], environment: environment)
        let object = (try? JSONSerialization.jsonObject(with: outcome.stdout)) as? [String: Any]
        let reports = object?["backups"] as? [[String: Any]] ?? []
        let report = reports.first { ($0["id"] as? String) == backup.id } ?? (reports.count == 1 ? reports.first : nil)
        let names = (report?["id"] as? String) == backup.id
            || (archivePath != nil && (report?["archive"] as? String) == archivePath)
        let damaged = (report?["damaged_files"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String }
        return VerifyVerdict(outcome: outcome, report: report, namesBackup: names, damagedFiles: damaged,
                             archiveProblems: report?["archive_problems"] as? [String] ?? [])
    }

    // MARK: Diagnosing

    /// Whether the damaged copy decompresses (by the reference tool, without complaint) to
    /// exactly the pristine tar stream: a flip in bits the decoder does not use, which
    /// changes nothing any reader gets. Only a hash of the whole archive notices it.
    func decodesIdentically(_ backup: CorpusBackup, _ damage: Damage) -> Bool {
        let compression: String, pristine: [UInt8], name: String
        switch damage.target {
        case .archive:
            guard backup.compression != "none" else { return false }
            (compression, pristine, name) = (backup.compression, backup.tar, backup.archiveName)
        case .storedManifest:
            (compression, pristine, name) = ("zstd", backup.manifest, backup.manifestName)
        case .manifest:
            return false
        }
        let file = path("identical-" + name)
        guard (try? RawFileSystem.writeFile(RawFileSystem.bytes(file), contents: damage.apply(to: backup.bytes(of: damage.target)))) != nil,
              let decoded = try? CorruptionCorpus.decompress(file, compression: compression) else { return false }
        return decoded.verdict.hasSuffix("exit 0") && decoded.bytes == pristine
    }

    /// For damage to a compressed archive: what the reference decompressor makes of the
    /// damaged copy — its verdict, and the first decompressed byte that differs from the
    /// pristine tar stream, located in it (empty for other damage).
    func diagnose(_ backup: CorpusBackup, _ damage: Damage) -> String {
        guard damage.target == .archive, backup.compression != "none" else { return "" }
        let file = path("diagnose-" + backup.archiveName)
        do {
            try RawFileSystem.writeFile(RawFileSystem.bytes(file), contents: damage.apply(to: backup.archive))
            let decoded = try CorruptionCorpus.decompress(file, compression: backup.compression)
            guard let first = zip(decoded.bytes, backup.tar).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset else {
                if decoded.bytes.count == backup.tar.count {
                    return "; \(decoded.verdict); decodes to the identical tar stream"
                }
                let cut = backup.tarLayout.region(at: decoded.bytes.count)
                return "; \(decoded.verdict); decodes to the first \(decoded.bytes.count) of \(backup.tar.count) bytes "
                    + "of the tar stream, cut in \(cut)"
            }
            return "; \(decoded.verdict); first decoded difference at tar offset \(first): \(backup.tarLayout.describe(first))"
        } catch {
            return "; cannot diagnose: \(error)"
        }
    }

    // MARK: Reporting

    /// Prints a heading and `lines`, indented, so the numbers stand out in the test log.
    func printReport(_ title: String, _ lines: [String]) {
        print("── \(title)")
        for line in lines { print("   " + line) }
    }
}
