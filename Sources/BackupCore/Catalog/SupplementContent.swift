import Foundation
import KeepsakeAge
import KeepsakeArchive
import KeepsakeEncryption
import KeepsakeHashing
import KeepsakeModel
import KeepsakeStorage
import KeepsakeSupport

/// The files in a supplement's archive: copied into one (prune) and checked against its
/// manifest (prune's read-back, verify).
enum SupplementContent {
    // MARK: Content

    /// Copies the current entry's content into `writer` (only hashes it without one), holes
    /// as zeros; returns its SHA-256.
    static func copy(of header: ArchiveEntryHeader, from reader: ArchiveReader, into writer: ArchiveWriter?) throws -> String {
        let hasher = SHA256Hasher()
        var written: Int64 = 0
        let zeros = [UInt8](repeating: 0, count: 64 * 1024)
        func fill(to end: Int64) throws {
            while written < end {
                let count = Int(min(Int64(zeros.count), end - written))
                try zeros.withUnsafeBytes { buffer in
                    let part = UnsafeRawBufferPointer(rebasing: buffer[..<count])
                    hasher.update(part)
                    try writer?.writeData(part, path: header.path)
                }
                written += Int64(count)
            }
        }
        while let block = try reader.nextBlock() {
            guard block.offset >= written, block.offset <= header.size - Int64(block.bytes.count) else {
                throw SupplementDamage(reason: "\(PathBytes.display(header.path)): its content is out of order in its archive")
            }
            try fill(to: block.offset)
            hasher.update(block.bytes)
            try writer?.writeData(block.bytes, path: header.path)
            written += Int64(block.bytes.count)
        }
        try fill(to: header.size)
        return hasher.finalizeHex()
    }

    // MARK: Manifest

    /// Writes the supplement's manifest, which commits it; encrypted (`keys`, which open
    /// what `manifest.encryption` records), its summary in the clear goes first.
    static func writeManifest(_ manifest: SupplementManifest, keys: AgeEncryption?, to storage: any WritableStorage) throws {
        guard (keys == nil) == (manifest.encryption == nil) else {
            throw EngineError.invalidRequest("the supplement \(manifest.id) must be written with the keys its manifest records")
        }
        if keys != nil {
            let summary = manifest.summary
            try storage.writeObject(summary.summaryName, bytes: summary.encoded())
        }
        let lines = manifest.encoded()
        let firstEnd = (lines.firstIndex(of: UInt8(ascii: "\n")) ?? lines.count - 1) + 1
        let pending = try storage.create(manifest.manifestName)
        do {
            let encrypting = try keys.map { try AgeEncryptingSink(downstream: pending, encryption: $0) }
            try SidecarManifest.write(summaryLine: Array(lines[..<firstEnd]), to: encrypting ?? pending, workers: 1) { sink in
                try lines[firstEnd...].withUnsafeBytes { try sink.write($0) }
            }
            try encrypting?.finish()
            try pending.commit()
        } catch {
            pending.abort()
            throw error
        }
    }

    // MARK: Checking

    /// The manifest of the supplement archive `name` as the copy inside it records it, with
    /// the archive's size and SHA-256 as read (for a supplement whose manifest object is gone).
    static func innerManifest(of name: String, in storage: KeyedStorage, cancellation: CancellationFlag) throws -> SupplementManifest {
        let (hashing, content) = try openHashed(name, in: storage)
        defer { content.close() }
        let reader = try ArchiveReader(source: content, name: name, cancellation: cancellation)
        var inner: [UInt8]?
        while let header = try reader.nextHeader() {
            try cancellation.check()
            if header.path == SupplementNaming.innerManifestPath {
                inner = try reader.readContent(limit: ManifestSizeLimit.hardLimit)
            } else {
                try reader.skipContent()
            }
        }
        try reader.readToEnd()
        try drain(hashing)
        guard let inner else { throw SupplementDamage(reason: "\(name) holds no copy of its manifest") }
        return try SupplementManifest.parse(inner, archive: (hashing.count, hashing.finalizeHex()))
    }

    /// Checks a supplement's archive against its manifest (see `check`); throws `SupplementDamage`
    /// naming what differs.
    static func checkArchive(of manifest: SupplementManifest, in storage: KeyedStorage, cancellation: CancellationFlag) throws {
        var expected: [PathKey: String] = [:]
        for entry in manifest.entries { expected[PathKey(entry.path)] = entry.sha256 }
        var expectedBlocks: [PathKey: HeldBlocks] = [:]
        for held in manifest.blocks { expectedBlocks[PathKey(SupplementNaming.blocksEntryPath(origin: held.origin, path: held.path))] = held }
        let (hashing, content) = try openHashed(manifest.archiveName, in: storage)
        defer { content.close() }
        let reader = try ArchiveReader(source: content, name: manifest.archiveName, cancellation: cancellation)
        while let header = try reader.nextHeader() {
            try cancellation.check()
            if let held = expectedBlocks.removeValue(forKey: PathKey(header.path)) {
                try checkBlocks(held, header: header, reader: reader, archive: manifest.archiveName, cancellation: cancellation)
                continue
            }
            if ArchiveLayout.isMetadataEntry(header.path) || header.path == SupplementNaming.innerManifestPath {
                try reader.skipContent()
                continue
            }
            guard header.type == .file, let sha = expected.removeValue(forKey: PathKey(header.path)),
                  sha == (try copy(of: header, from: reader, into: nil)) else {
                throw SupplementDamage(reason: "\(PathBytes.display(header.path)) in \(manifest.archiveName) is not as its manifest records")
            }
        }
        try reader.readToEnd()
        try drain(hashing)
        if let missing = expected.keys.first ?? expectedBlocks.keys.first {
            throw SupplementDamage(reason: "\(PathBytes.display(missing.bytes)) is missing from \(manifest.archiveName)")
        }
        guard hashing.count == manifest.archiveSize, hashing.finalizeHex() == manifest.archiveSHA256 else {
            throw SupplementDamage(reason: "\(manifest.archiveName) is not the archive its manifest records (size or SHA-256)")
        }
    }

    /// Checks the entry at the reader (`header`) that holds `held`: of its size, holding
    /// exactly those blocks, each with its digest.
    static func checkBlocks(_ held: HeldBlocks, header: ArchiveEntryHeader, reader: ArchiveReader, archive: String,
                            cancellation: CancellationFlag) throws {
        let shown = PathBytes.display(header.path)
        guard header.type == .file, header.size == held.entrySize else {
            throw SupplementDamage(reason: "\(shown) in \(archive) is not the entry of blocks its manifest records")
        }
        let check = BlockCheck(held: held)
        while let block = try reader.nextBlock() {
            try cancellation.check()
            check.add(block.bytes, at: block.offset)
        }
        let found = check.finish()
        if let problem = found.problem ?? (found.matched.count == held.indices.count ? nil
            : "it holds \(found.matched.count) of the \(held.indices.count) blocks its manifest records") {
            throw SupplementDamage(reason: "\(shown) in \(archive): \(problem)")
        }
    }

    /// Opens the archive `name` to be read through `content` while `stored` hashes its
    /// bytes as stored (below the decryption of an encrypted one).
    private static func openHashed(_ name: String, in storage: KeyedStorage) throws -> (stored: HashingSource, content: ByteSource) {
        let raw = try storage.stored.open(name)
        let hashing = HashingSource(source: raw)
        do {
            guard try storage.isEncrypted(name, raw) else { return (hashing, hashing) }
            return (hashing, try storage.openStream(hashing, name: name))
        } catch {
            raw.close()
            throw error
        }
    }

    /// Reads what is left of `source` (bytes after the end of what was read above it are
    /// hashed too: an archive with more after its end is not the one recorded).
    private static func drain(_ source: ByteSource) throws {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while try buffer.withUnsafeMutableBytes({ try source.read(into: $0) }) > 0 {}
    }

    // MARK: Orphans

    /// The supplement archives in `objects` without their manifest, with their ids.
    static func orphans(in objects: [StoredObject]) -> [(id: BackupID, name: String)] {
        let names = Set(objects.map(\.name))
        return objects.compactMap { object in
            guard let parts = SupplementNaming.parts(ofArchiveName: object.name),
                  let manifest = SupplementNaming.manifestName(forArchive: object.name), !names.contains(manifest) else { return nil }
            return (parts.id, object.name)
        }
    }

    /// The summaries in the clear in `objects` whose supplement has neither manifest nor
    /// archive left: what a prune interrupted while removing an encrypted supplement leaves.
    static func strandedSummaries(in objects: [StoredObject]) -> [String] {
        let names = Set(objects.map(\.name))
        return objects.compactMap { object in
            guard let parts = SupplementNaming.parts(ofSummaryName: object.name),
                  !names.contains(SupplementNaming.manifestName(host: parts.host, id: parts.id, encrypted: true)),
                  !names.contains(SupplementNaming.archiveName(host: parts.host, id: parts.id, encrypted: true)) else { return nil }
            return object.name
        }
    }

    /// Commits the supplement archive `name` (id `id`) again from the copy of its manifest
    /// inside it, once the archive checks out whole against that copy; returns the manifest
    /// written. An encrypted one is written with the keys `keys` gives for what its copy
    /// records, and throws `EncryptionError` when it gives none. Throws what is wrong, having
    /// written nothing.
    static func commitAgain(_ name: String, id: BackupID, in storage: any WritableStorage, keyring: AgeKeyring,
                            keys: (BackupEncryption) -> AgeEncryption?, cancellation: CancellationFlag) throws -> SupplementManifest {
        let keyed = KeyedStorage(storage, keyring: keyring)
        let manifest = try innerManifest(of: name, in: keyed, cancellation: cancellation)
        guard manifest.id == id, manifest.archiveName == name else {
            throw SupplementDamage(reason: "the copy of its manifest names another supplement")
        }
        try checkArchive(of: manifest, in: keyed, cancellation: cancellation)
        var encryption: AgeEncryption?
        if let record = manifest.encryption {
            guard let given = keys(record) else {
                throw EncryptionError.unusableKey("the supplement \(name) is encrypted (\(record.label)) and its keys are not "
                    + "given here: a prune given them (--identity or --passphrase-file, and --recipient for each public key) "
                    + "commits it again")
            }
            encryption = given
        }
        try writeManifest(manifest, keys: encryption, to: storage)
        return manifest
    }
}
