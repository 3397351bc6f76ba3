import KeepsakeAge
import KeepsakeArchive
import KeepsakeModel
import KeepsakeStorage
import KeepsakeSupport

/// A destination seen through a keyring: encrypted objects (`….age` in a destination; any
/// age file beside a lone archive) open as their plaintext, front to back or at any plaintext
/// offset, so everything that reads backups (list of files, diff, find, verify, restore)
/// works on encrypted ones unchanged. Everything else passes through; writing is the
/// engine's business (it encrypts what it stores itself).
public final class DecryptingStorage: StorageBackend {
    // MARK: State

    /// The destination as stored (copy and prune use it directly: they need no key).
    public let base: StorageBackend
    /// The keys encrypted objects are opened with.
    public let keyring: AgeKeyring

    /// `base`, opening encrypted objects with `keyring`.
    public init(_ base: StorageBackend, keyring: AgeKeyring) {
        self.base = base
        self.keyring = keyring
    }

    /// The stored destination under any number of `DecryptingStorage` layers.
    public static func stored(_ storage: StorageBackend) -> StorageBackend {
        (storage as? DecryptingStorage).map { stored($0.base) } ?? storage
    }

    // MARK: StorageBackend

    public var location: String { base.location }
    public var isReadOnly: Bool { base.isReadOnly }
    public var memo: ObjectMemo? { base.memo }
    public func prepare() throws { try base.prepare() }
    public func list() throws -> [StoredObject] { try base.list() }
    public func create(_ name: String) throws -> PendingObject { try base.create(name) }
    public func delete(_ name: String) throws { try base.delete(name) }
    public func move(_ name: String, to newName: String) throws { try base.move(name, to: newName) }
    public func acquireLock(_ owner: LockOwner) throws -> DestinationLock { try base.acquireLock(owner) }
    public func removeLeftovers() throws -> [String] { try base.removeLeftovers() }

    /// Opens `name`; an age file comes back decrypted. In a destination, Keepsake's own
    /// names say which objects are encrypted (`.age`); a folder holding a lone archive is
    /// the user's, so there the first bytes decide (no extra request for every object of a
    /// bucket).
    public func open(_ name: String) throws -> RandomAccessSource {
        let stored = try base.open(name)
        do {
            guard try DecryptingStorage.isEncrypted(name, stored, in: base) else { return stored }
            return try tellingDamage(name) { try keyring.open(stored, name: name) }
        } catch {
            stored.close()
            throw error
        }
    }

    /// Whether the object `name` of `storage`, opened as `stored`, is an age file: by its
    /// name in a destination; by its first bytes in a folder holding a lone archive.
    static func isEncrypted(_ name: String, _ stored: RandomAccessSource, in storage: StorageBackend) throws -> Bool {
        if BackupNaming.isEncrypted(name) { return true }
        guard storage.isReadOnly else { return false }
        return AgeFormat.isAgeFile(prefix: try stored.bytes(at: 0, count: 64))
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

    /// True when the summary in the clear beside the object `name` lists one of `keys`
    /// among its backup's recipients.
    private func isEncrypted(_ name: String, toAnyOf keys: [String]) -> Bool {
        guard let stem = BackupNaming.stem(of: name),
              let bytes = try? base.readObject(stem + BackupNaming.publicSummarySuffix, limit: 1 << 20),
              let summary = try? Manifest.parseSummary(bytes),
              case .recipients(let recipients)? = summary.encryption else { return false }
        return !Set(recipients).isDisjoint(with: keys)
    }
}
