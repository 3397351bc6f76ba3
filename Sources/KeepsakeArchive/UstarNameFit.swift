/// Names that fit a ustar header's name fields, for entries whose real name travels in a pax
/// record: a shortened form of a long or non-ASCII path, and the names of the pax extended
/// header and of a sparse file's body.
///
/// Readers that know pax ignore these names, so what matters is that they are harmless and
/// the same as libarchive 3.6 wrote (archives stay byte for byte what they were): keep the
/// leading folders and the start of the file name, within 155 bytes of prefix and 100 of name.
enum UstarNameFit {
    // MARK: Names for headers

    /// `path` shortened to fit (at most 155 bytes before a `/` and 100 after), or as it is when
    /// it is under 100 bytes.
    static func shortened(_ path: ArraySlice<UInt8>) -> [UInt8] {
        if path.count < 100 { return Array(path) }
        return fitted(path, inserting: nil)
    }

    /// The name of the pax extended header for the entry named `name` (already fitted):
    /// `folder/PaxHeader/file`.
    static func paxHeaderName(for name: ArraySlice<UInt8>) -> [UInt8] {
        if name.isEmpty { return Array("PaxHeader/blank".utf8) }
        let trimmed = trimmingTrailingSeparators(name)
        if trimmed.isEmpty { return Array("/PaxHeader/rootdir".utf8) }
        if trimmed.count == 1 && trimmed.first == UInt8(ascii: ".") { return Array("PaxHeader/currentdir".utf8) }
        return fitted(trimmed, inserting: Array("PaxHeader".utf8))
    }

    /// The ustar name of a sparse file's entry in GNU's sparse format 1.0:
    /// `folder/GNUSparseFile.0/file`.
    static func sparseFileName(for name: ArraySlice<UInt8>) -> [UInt8] {
        if name.isEmpty { return Array("GNUSparseFile/blank".utf8) }
        return fitted(trimmingTrailingSeparators(name), inserting: Array("GNUSparseFile.0".utf8))
    }

    // MARK: Fitting

    /// Drops trailing `/` and `/.` (`a/b/./` → `a/b`).
    private static func trimmingTrailingSeparators(_ name: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var end = name.endIndex
        while true {
            if end > name.startIndex && name[end - 1] == slash {
                end -= 1
            } else if end > name.startIndex + 1 && name[end - 1] == dot && name[end - 2] == slash {
                end -= 1
            } else {
                break
            }
        }
        return name[name.startIndex..<end]
    }

    /// The fitted name: a prefix of folders (up to 155 bytes, ending at a `/`), more folders
    /// while the rest fits 99 bytes, the inserted folder if any, then the file name cut to fit;
    /// a trailing `/` (or `/.`) of the original is kept as one `/`.
    private static func fitted(_ source: ArraySlice<UInt8>, inserting insert: [UInt8]?) -> [UInt8] {
        let start = source.startIndex
        // One less than the fields hold: a trailing `/` may be added to either part (the
        // limits of libarchive's fix for an overflow, which Debian 12's 3.6.2 carries).
        var suffixRoom = 98
        var filenameEnd = source.endIndex
        var needsSlash = false
        while true {
            if filenameEnd > start && source[filenameEnd - 1] == slash {
                filenameEnd -= 1
                needsSlash = true
            } else if filenameEnd > start + 1 && source[filenameEnd - 1] == dot && source[filenameEnd - 2] == slash {
                filenameEnd -= 2
                needsSlash = true
            } else {
                break
            }
        }
        // Nothing but slashes: a root-like name.
        if filenameEnd == start { return (insert ?? []) + [slash] }
        if needsSlash { suffixRoom -= 1 }
        // The file name: after the last `/` before its end.
        var filename = filenameEnd - 1
        while filename > start && source[filename] != slash { filename -= 1 }
        if source[filename] == slash && filename < filenameEnd - 1 { filename += 1 }
        suffixRoom -= insert.map { $0.count + 2 } ?? 0
        if filenameEnd > filename + suffixRoom { filenameEnd = filename + suffixRoom }
        suffixRoom -= filenameEnd - filename

        // The prefix: folders within the first 154 bytes, ending after a `/`.
        var prefixEnd = min(start + 154, filename)
        while prefixEnd > start && source[prefixEnd] != slash { prefixEnd -= 1 }
        if prefixEnd < filename && source[prefixEnd] == slash { prefixEnd += 1 }

        // More folders, as many as fit before the file name.
        let suffix = prefixEnd
        var suffixEnd = min(suffix + max(suffixRoom, 0), filename)
        while suffixEnd > suffix && source[suffixEnd] != slash { suffixEnd -= 1 }
        if suffixEnd < filename && source[suffixEnd] == slash { suffixEnd += 1 }

        var name: [UInt8] = []
        name.reserveCapacity(256)
        name.append(contentsOf: source[start..<prefixEnd])
        name.append(contentsOf: source[suffix..<suffixEnd])
        if let insert {
            name.append(contentsOf: insert)
            name.append(slash)
        }
        name.append(contentsOf: source[filename..<filenameEnd])
        if needsSlash { name.append(slash) }
        return name
    }

    private static let slash = UInt8(ascii: "/")
    private static let dot = UInt8(ascii: ".")
}
