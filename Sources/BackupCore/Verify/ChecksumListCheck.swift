import KeepsakeModel

/// Checks an archive's SHA256SUMS list against its manifest as the list is read, a line at
/// a time: it must name, in manifest order, every file and hard link whose content the
/// archive holds, with the manifest's SHA-256 for each, and nothing else. Keepsake writes
/// both in archive order; two tables of 100,000 paths to compare them out of order took
/// about 30 MB.
final class ChecksumListCheck {
    // MARK: State

    private let entries: ManifestEntries
    /// The next entry that may be listed.
    private var next = 0
    /// The start of a line whose end has not arrived yet.
    private var pending: [UInt8] = []
    private var failed = false

    // MARK: Life cycle

    /// A check of a list against `manifest`.
    init(manifest: Manifest) {
        entries = manifest.entries
    }

    /// Whether `list` (a whole SHA256SUMS) matches `manifest`.
    static func matches(_ list: [UInt8], manifest: Manifest) -> Bool {
        let check = ChecksumListCheck(manifest: manifest)
        list.withUnsafeBytes { check.update($0) }
        return check.finish()
    }

    // MARK: Feeding

    /// Takes the next bytes of the list.
    func update(_ chunk: UnsafeRawBufferPointer) {
        guard !failed else { return }
        var start = 0
        while start < chunk.count {
            guard let newline = chunk[start...].firstIndex(of: UInt8(ascii: "\n")) else {
                // (The reader bounds the whole list, and so this line.)
                pending.append(contentsOf: chunk[start...])
                return
            }
            if pending.isEmpty {
                take(UnsafeRawBufferPointer(rebasing: chunk[start..<newline]))
            } else {
                pending.append(contentsOf: chunk[start..<newline])
                let line = pending
                pending.removeAll(keepingCapacity: true)
                line.withUnsafeBytes { take($0) }
            }
            start = newline + 1
        }
    }

    /// True when the whole list matched.
    func finish() -> Bool {
        if !pending.isEmpty {
            let line = pending
            pending = []
            line.withUnsafeBytes { take($0) }
        }
        guard !failed else { return false }
        // Nothing the archive holds may be left unlisted.
        return nextListable() == nil
    }

    // MARK: Lines

    /// The position of the next entry the list must name, from `next` on.
    private func nextListable() -> Int? {
        while next < entries.count {
            let type = entries.type(at: next)
            if entries.isWholeInOwnArchive(at: next), type == .file || type == .hardlink, entries.sha256(at: next) != nil {
                return next
            }
            next += 1
        }
        return nil
    }

    /// One line: `HASH  PATH`, or `\HASH  PATH` with `\\` and `\n` escaped (GNU coreutils).
    private func take(_ line: UnsafeRawBufferPointer) {
        guard !failed, !line.isEmpty else { return }
        var bytes = line[...]
        let escaped = bytes.first == UInt8(ascii: "\\")
        if escaped { bytes = bytes.dropFirst() }
        let start = bytes.startIndex
        guard bytes.count > 66, bytes[start + 64] == 32, bytes[start + 65] == 32 else {
            failed = true
            return
        }
        var path: [UInt8] = []
        var index = start + 66
        while index < bytes.endIndex {
            if escaped, bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.endIndex {
                path.append(bytes[index + 1] == UInt8(ascii: "n") ? 10 : bytes[index + 1])
                index += 2
            } else {
                path.append(bytes[index])
                index += 1
            }
        }
        guard let position = nextListable(), entries.path(at: position, equals: path[...]),
              let sha = entries.sha256(at: position), sha.utf8.elementsEqual(bytes[start..<(start + 64)]) else {
            failed = true
            return
        }
        next = position + 1
    }
}
