/// Checks that a backup comes from the host holding a signing key, before anything of it is
/// used: its signature object is signed by the key given, speaks of this backup, and names
/// every object that will be read with the size and SHA-256 those objects have now (stored
/// bytes, so an encrypted backup is checked before it is decrypted).
public struct SignatureCheck: Sendable {
    // MARK: State

    /// The key a signature must be made by.
    public let key: SigningPublicKey

    public init(key: SigningPublicKey) {
        self.key = key
    }

    // MARK: Checking

    /// Checks the backup named `stem` (`HOST_ID`) in `storage`; `label` names it in messages.
    /// `reading` are the objects the caller will read: the statement must name each. In a
    /// folder around a lone archive file (`lone`), a manifest the statement names may be
    /// missing (the archive holds its own); everything else it names must be there.
    /// - Throws: `SigningError` for a missing, foreign, forged or outdated signature.
    ///
    /// With `archiveFacts`, the archive is not read: its line must say those facts (name,
    /// size, SHA-256), and the caller checks the archive's bytes against them as it reads it
    /// anyway (verify does).
    @discardableResult
    public func check(stem: String, label: String, in storage: StorageBackend, reading: [String], lone: Bool = false,
                      archiveFacts: BackupSummary.ArchiveFacts? = nil,
                      cancellation: CancellationFlag = CancellationFlag()) throws -> SignedStatement {
        // The bytes as stored: a signature is checked before anything is decrypted.
        let stored = DecryptingStorage.stored(storage)
        var sizes: [String: Int64] = [:]
        for object in try stored.list() where BackupNaming.stem(of: object.name) == stem { sizes[object.name] = object.size }
        let name = BackupNaming.signatureName(forStem: stem)
        guard let size = sizes[name] else { throw SigningError.unsigned(backup: label, destination: stored.location, signature: name) }
        guard size <= BackupSignature.sizeLimit,
              let signature = BackupSignature(parsing: try stored.readObject(name, limit: BackupSignature.sizeLimit)) else {
            throw SigningError.forged(backup: label, reason: "\(name) is not a signature object")
        }
        guard signature.isSigned(by: key) else {
            if signature.claimedKey != key {
                throw SigningError.otherKey(backup: label, signedBy: signature.claimedKey.encoded, expected: key.encoded)
            }
            throw SigningError.forged(backup: label, reason: "the signature in \(name) is not the key's signature of its statement")
        }
        guard let statement = SignedStatement(parsing: signature.statementText) else {
            throw SigningError.forged(backup: label, reason: "the statement in \(name) is not in Keepsake's form")
        }
        guard statement.stem == stem else {
            throw SigningError.forged(backup: label, reason: "its signature was made for backup \(statement.stem)")
        }
        for wanted in reading where !statement.objects.contains(where: { $0.name == wanted }) {
            throw SigningError.altered(backup: label, object: wanted, reason: "the signature does not name it")
        }
        for object in statement.objects {
            if object.role == .archive, let archiveFacts {
                guard object.name == archiveFacts.name, object.size == archiveFacts.size, object.sha256 == archiveFacts.sha256 else {
                    throw SigningError.altered(backup: label, object: archiveFacts.name,
                                               reason: "its manifest records another archive than the one signed")
                }
                continue
            }
            guard let size = sizes[object.name] else {
                if lone && object.role == .manifest { continue }
                throw SigningError.altered(backup: label, object: object.name, reason: "it is missing from \(stored.location)")
            }
            guard size == object.size else {
                throw SigningError.altered(backup: label, object: object.name,
                                           reason: "it is \(size) bytes; the signature says \(object.size)")
            }
            guard try digest(of: object.name, in: stored, cancellation: cancellation) == object.sha256 else {
                throw SigningError.altered(backup: label, object: object.name, reason: "its SHA-256 is not the one signed")
            }
        }
        return statement
    }

    /// Whether `item` carries a signature by the key that speaks of it: made for its name,
    /// naming its manifest with the size `sizes` lists and the archive its summary records.
    /// No object is read but the signature: what prune needs to tell a backup this key
    /// signed from one planted beside it, at the cost of one small read per backup.
    public func vouchesFor(_ item: BackupCatalog.Item, in storage: StorageBackend, sizes: [String: Int64]) -> Bool {
        let stored = DecryptingStorage.stored(storage)
        guard let stem = BackupNaming.stem(of: item.manifestName), let facts = item.summary?.archive,
              let size = sizes[BackupNaming.signatureName(forStem: stem)], size <= BackupSignature.sizeLimit,
              let bytes = try? stored.readObject(BackupNaming.signatureName(forStem: stem), limit: BackupSignature.sizeLimit),
              let signature = BackupSignature(parsing: bytes), signature.isSigned(by: key),
              let statement = SignedStatement(parsing: signature.statementText), statement.stem == stem,
              let manifest = statement.object(.manifest), manifest.name == item.manifestName,
              manifest.size == sizes[item.manifestName],
              let archive = statement.object(.archive) else { return false }
        return archive.name == facts.name && archive.size == facts.size && archive.sha256 == facts.sha256
    }

    /// The SHA-256 (hex) of the stored object `name`, read front to back.
    private func digest(of name: String, in storage: StorageBackend, cancellation: CancellationFlag) throws -> String {
        let hashing = HashingSource(source: try storage.open(name))
        defer { hashing.close() }
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while try chunk.withUnsafeMutableBytes({ try hashing.read(into: $0) }) > 0 { try cancellation.check() }
        return hashing.finalizeHex()
    }
}
