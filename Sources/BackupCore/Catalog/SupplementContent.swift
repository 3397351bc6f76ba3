import Foundation
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

    /// Writes the supplement's manifest, which commits it.
    static func writeManifest(_ manifest: SupplementManifest, to storage: any WritableStorage) throws {
        let lines = manifest.encoded()
        let firstEnd = (lines.firstIndex(of: UInt8(ascii: "\n")) ?? lines.count - 1) + 1
        let pending = try storage.create(SupplementNaming.manifestName(host: manifest.host, id: manifest.id))
        do {
            try SidecarManifest.write(summaryLine: Array(lines[..<firstEnd]), to: pending, workers: 1) { sink in
                try lines[firstEnd...].withUnsafeBytes { try sink.write($0) }
            }
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
        let hashing = HashingSource(source: try storage.open(name))
        defer { hashing.close() }
        let reader = try ArchiveReader(source: hashing, name: name, cancellation: cancellation)
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
        guard let inner else { throw SupplementDamage(reason: "\(name) holds no copy of its manifest") }
        return try SupplementManifest.parse(inner, archive: (hashing.count, hashing.finalizeHex()))
    }

    /// Checks a supplement's archive against its manifest (see `check`); throws `SupplementDamage`
    /// naming what differs.
    static func checkArchive(of manifest: SupplementManifest, in storage: KeyedStorage, cancellation: CancellationFlag) throws {
        var expected: [PathKey: String] = [:]
        for entry in manifest.entries { expected[PathKey(entry.path)] = entry.sha256 }
        let opened = try storage.open(manifest.archiveName)
        let hashing = HashingSource(source: opened)
        defer { hashing.close() }
        let reader = try ArchiveReader(source: hashing, name: manifest.archiveName, cancellation: cancellation)
        while let header = try reader.nextHeader() {
            try cancellation.check()
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
        if let missing = expected.keys.first {
            throw SupplementDamage(reason: "\(PathBytes.display(missing.bytes)) is missing from \(manifest.archiveName)")
        }
        guard hashing.count == manifest.archiveSize, hashing.finalizeHex() == manifest.archiveSHA256 else {
            throw SupplementDamage(reason: "\(manifest.archiveName) is not the archive its manifest records (size or SHA-256)")
        }
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

    /// Commits the supplement archive `name` (id `id`) again from the copy of its manifest
    /// inside it, once the archive checks out whole against that copy; returns the manifest
    /// written. Throws what is wrong, having written nothing.
    static func commitAgain(_ name: String, id: BackupID, in storage: any WritableStorage, keyring: AgeKeyring,
                            cancellation: CancellationFlag) throws -> SupplementManifest {
        let keyed = KeyedStorage(storage, keyring: keyring)
        let manifest = try innerManifest(of: name, in: keyed, cancellation: cancellation)
        guard manifest.id == id, manifest.archiveName == name else {
            throw SupplementDamage(reason: "the copy of its manifest names another supplement")
        }
        try checkArchive(of: manifest, in: keyed, cancellation: cancellation)
        try writeManifest(manifest, to: storage)
        return manifest
    }
}
