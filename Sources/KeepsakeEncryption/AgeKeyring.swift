import KeepsakeAge
import KeepsakeArchive
import KeepsakeModel
import KeepsakeStorage
import KeepsakeSupport

/// The keys a command may open encrypted backups with: identities from key files, and a
/// passphrase that is asked for only when an object turns out to need one (then kept for the
/// rest of the command, so a chain of archives asks once).
public final class AgeKeyring: Sendable {
    // MARK: State

    /// The identities given (`--identity`, `KEEPSAKE_IDENTITY_FILE`).
    public let identities: [AgeIdentity]
    private let passphraseSource: (@Sendable () throws -> [UInt8]?)?
    private let passphrase = LockedValue<[UInt8]?>(nil)
    /// True when the passphrase is asked for (a prompt), not read from a file.
    public let asksForPassphrase: Bool

    /// A keyring holding `identities`, which calls `passphrase` (at most once with an answer)
    /// when an object needs a passphrase; it returns nil when none can be had. `asks` says
    /// that calling it prompts a person (so it is called only when a command must).
    public init(identities: [AgeIdentity] = [], asks: Bool = false, passphrase: (@Sendable () throws -> [UInt8]?)? = nil) {
        self.identities = identities
        asksForPassphrase = asks && passphrase != nil
        passphraseSource = passphrase
    }

    /// A keyring that opens nothing: encrypted objects then name the key they need.
    public static let empty = AgeKeyring()

    /// True when neither an identity nor a way to a passphrase was given.
    public var isEmpty: Bool { identities.isEmpty && passphraseSource == nil }

    /// True when a backup encrypted like `encryption` opens without asking anyone (for what
    /// is merely nice to show, such as the sources in a listing).
    public func opensWithoutAsking(_ encryption: BackupEncryption?) -> Bool {
        guard case .passphrase? = encryption else { return mayOpen(encryption) }
        return passphraseSource != nil && !asksForPassphrase
    }

    /// True when a backup encrypted like `encryption` may be opened: an identity for public
    /// keys, a passphrase (or a way to ask for one) for a passphrase.
    public func mayOpen(_ encryption: BackupEncryption?) -> Bool {
        switch encryption {
        case .recipients?: return !identities.isEmpty
        case .passphrase?: return passphraseSource != nil
        case nil: return !isEmpty
        }
    }

    /// The passphrase given or asked for so far, nil before one is known: prune encrypts a
    /// supplement with the passphrase that opened the backup it belongs to.
    package var knownPassphrase: [UInt8]? { passphrase.withLock { $0 } }

    // MARK: Opening

    /// `ciphertext` (the age file `name`) decrypted, readable at any offset. Throws
    /// `EncryptionError` naming `name` when no key given opens it, and `ArchiveError.damaged`
    /// when its header (or, while reading, a chunk) is damaged.
    public func open(_ ciphertext: RandomAccessSource, name: String) throws -> RandomAccessSource {
        DecryptedObject(try decrypting(name) { try AgeDecryptingSource(ciphertext: ciphertext, keys: $0) }, name: name)
    }

    /// `ciphertext` decrypted front to back (verify hashes the stored bytes beneath it).
    public func openStream(_ ciphertext: ByteSource, name: String) throws -> ByteSource {
        // The header is read ahead and kept, so a second try (once a passphrase is known)
        // starts from the first byte again.
        var head = [UInt8](repeating: 0, count: AgeKeyring.streamHeadLength)
        var filled = 0
        while filled < head.count {
            let count = try head.withUnsafeMutableBytes { try ciphertext.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...])) }
            if count == 0 { break }
            filled += count
        }
        head.removeSubrange(filled...)
        return DecryptedObject(try decrypting(name) { keys in
            try AgeDecryptingSource(stream: PrefixedSource(prefix: head, source: ciphertext), keys: keys)
        }, name: name)
    }

    /// How much of a stream is read ahead for its header (age headers are far smaller).
    private static let streamHeadLength = 256 * 1024

    /// Runs `open` with the identities and the passphrase known so far; asks for the
    /// passphrase once when the object turns out to need one.
    private func decrypting(_ name: String, _ open: (AgeDecryptionKeys) throws -> AgeDecryptingSource) throws -> AgeDecryptingSource {
        let known = passphrase.withLock { $0 }
        do {
            return try open(AgeDecryptionKeys(identities: identities, passphrase: known))
        } catch AgeError.passphraseRequired where known == nil {
            guard let asked = try passphraseSource?() else { throw EncryptionError.passphraseRequired(name: name) }
            passphrase.withLock { $0 = asked }
            do {
                return try open(AgeDecryptionKeys(identities: identities, passphrase: asked))
            } catch let error as AgeError {
                throw AgeKeyring.translate(error, name: name, identities: identities)
            }
        } catch let error as AgeError {
            throw AgeKeyring.translate(error, name: name, identities: identities)
        }
    }

    /// What an age failure means for the object `name`: a key problem, or damage.
    static func translate(_ error: AgeError, name: String, identities: [AgeIdentity]) -> Error {
        switch error {
        case .identityRequired: return EncryptionError.identityRequired(name: name)
        case .passphraseRequired: return EncryptionError.passphraseRequired(name: name)
        case .noMatchingIdentity:
            return EncryptionError.noMatchingIdentity(name: name, recipients: identities.map(\.recipient.encoded))
        case .wrongPassphrase: return EncryptionError.wrongPassphrase(name: name)
        case .invalidKey(let reason): return EncryptionError.unusableKey(reason)
        case .io(let reason): return StorageError.io(name: name, operation: "read", reason: reason)
        default: return ArchiveError.damaged(archive: name, reason: "its encryption says: \(error)")
        }
    }
}
