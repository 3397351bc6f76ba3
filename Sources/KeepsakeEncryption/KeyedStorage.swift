import KeepsakeAge
import KeepsakeArchive
import KeepsakeModel
import KeepsakeStorage
import KeepsakeSupport

/// Backups as they are read: a store and, beside it, the keys its encrypted objects open
/// with. Every reader of backups (the catalog, restore, verify, diff, find) is given one:
/// `open` hands encrypted objects (`….age` in a destination; any age file beside a lone
/// archive) back as their plaintext, front to back or at any plaintext offset, so reading
/// works on encrypted backups unchanged. `stored` is the store itself, for what reads the
/// objects as stored (signatures, a copy's source); a reader cannot write through either,
/// and a writer holds its `WritableStorage` and its keyring as two values of its own.
public struct KeyedStorage {
    // MARK: State

    /// The objects as stored.
    public let stored: any ReadableStorage
    /// The keys encrypted objects are opened with.
    public let keyring: AgeKeyring

    /// `stored`, opening encrypted objects with `keyring`.
    public init(_ stored: any ReadableStorage, keyring: AgeKeyring) {
        self.stored = stored
        self.keyring = keyring
    }

    // MARK: The store's own

    /// The destination as people name it.
    public var location: String { stored.location }
    /// What was worked out from the store's objects in this process (see `ObjectMemo`).
    public var memo: ObjectMemo? { stored.memo }

    /// The store's committed objects.
    public func list() throws -> [StoredObject] { try stored.list() }

    // MARK: Reading

    /// Opens `name`; an age file comes back decrypted. In a destination, Keepsake's own
    /// names say which objects are encrypted (`.age`); a folder holding a lone archive is
    /// the user's, so there the first bytes decide (no extra request for every object of a
    /// bucket).
    public func open(_ name: String) throws -> RandomAccessSource {
        let source = try stored.open(name)
        do {
            guard try isEncrypted(name, source) else { return source }
            return try tellingDamage(name) { try keyring.open(source, name: name) }
        } catch {
            source.close()
            throw error
        }
    }

    /// Reads a whole (small) object into memory, decrypted when it is an age file.
    public func readObject(_ name: String, limit: Int = 1 << 30) throws -> [UInt8] {
        let source = try open(name)
        defer { source.close() }
        return try source.readAll(limit: limit)
    }

    /// Whether the object `name`, opened from `stored` as `source`, is an age file: by its
    /// name in a destination; by its first bytes in a folder holding a lone archive.
    package func isEncrypted(_ name: String, _ source: RandomAccessSource) throws -> Bool {
        if BackupNaming.isEncrypted(name) { return true }
        guard stored.naming == .foreign else { return false }
        return AgeFormat.isAgeFile(prefix: try source.bytes(at: 0, count: 64))
    }

    /// The stored object `name`, read front to back through `ciphertext` (which the caller
    /// hashes), decrypted.
    public func openStream(_ ciphertext: ByteSource, name: String) throws -> ByteSource {
        try tellingDamage(name) { try keyring.openStream(ciphertext, name: name) }
    }

    /// Runs `open`; a header that none of the identities opens although the backup says it
    /// was encrypted to one of their public keys is damaged, not the key wrong.
    private func tellingDamage<T>(_ name: String, _ open: () throws -> T) throws -> T {
        do {
            return try open()
        } catch EncryptionError.noMatchingIdentity(let object, let given) where isEncrypted(name, toAnyOf: given) {
            throw ArchiveError.damaged(archive: object, reason: "its age header does not open with the identity of a public key "
                + "it was encrypted to (\(given.joined(separator: ", "))): the header is damaged")
        }
    }

    /// True when the summary in the clear beside the object `name` (a backup's, or a
    /// supplement's) lists one of `keys` among its recipients.
    private func isEncrypted(_ name: String, toAnyOf keys: [String]) -> Bool {
        guard case .recipients(let recipients)? = claimedEncryption(of: name) else { return false }
        return !Set(recipients).isDisjoint(with: keys)
    }

    /// How the summary in the clear beside the object `name` says it is encrypted.
    private func claimedEncryption(of name: String) -> BackupEncryption? {
        if let parts = SupplementNaming.parts(ofManifestName: name) ?? SupplementNaming.parts(ofArchiveName: name) {
            let bytes = try? stored.readObject(SupplementNaming.summaryName(host: parts.host, id: parts.id), limit: 1 << 20)
            return bytes.flatMap { try? SupplementSummary.parse($0) }?.header.encryption
        }
        guard let stem = BackupNaming.stem(of: name),
              let bytes = try? stored.readObject(stem + BackupNaming.publicSummarySuffix, limit: 1 << 20) else { return nil }
        return (try? Manifest.parseSummary(bytes))?.encryption
    }
}
