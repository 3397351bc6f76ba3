import KeepsakeModel
import KeepsakeStorage
import KeepsakeSupport

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

    /// The sizes of `storage`'s objects as stored, by name: what a check compares with.
    /// Listed once per command and handed to every check it makes.
    public static func sizes(in storage: any ReadableStorage) throws -> [String: Int64] {
        var sizes: [String: Int64] = [:]
        for object in try storage.list() { sizes[object.name] = object.size }
        return sizes
    }

    /// Checks the backup named `stem` (`HOST_ID`) in `storage`, whose objects `sizes` lists
    /// (`SignatureCheck.sizes(in:)`); `label` names it in messages. `reading` are the objects
    /// the caller will read: the statement must name each. In a folder around a lone archive
    /// file (`lone`), a manifest the statement names may be missing (the archive holds its
    /// own); everything else it names must be there.
    ///
    /// With `archiveFacts`, the archive is not read: its line must say those facts (name,
    /// size, SHA-256), and the caller checks the archive's bytes against them as it reads it
    /// anyway (verify does). Without `hashing`, no object but the signature is read: their
    /// listed sizes must be the signed ones.
    /// - Throws: `SigningError` for a missing, foreign, forged or outdated signature.
    @discardableResult
    public func check(stem: String, label: String, in storage: any ReadableStorage, sizes: [String: Int64], reading: [String],
                      lone: Bool = false, archiveFacts: BackupSummary.ArchiveFacts? = nil, hashing: Bool = true,
                      cancellation: CancellationFlag = CancellationFlag()) throws -> SignedStatement {
        // The bytes as stored (`storage` never decrypts): a signature is checked before
        // anything is decrypted.
        let stored = storage
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
            guard hashing else { continue }
            guard try stored.sha256(of: object.name, cancellation: cancellation) == object.sha256 else {
                throw SigningError.altered(backup: label, object: object.name, reason: "its SHA-256 is not the one signed")
            }
        }
        return statement
    }
}
