/// The 16-byte file key of an age file: made fresh for each file, given to each recipient in
/// a stanza, and the root of the header MAC key and the payload key.
enum AgeFileKey {
    // MARK: Making

    /// A fresh random file key.
    static func generate() throws -> SecretBytes {
        var bytes = try SecureRandom.bytes(AgeFormat.fileKeyLength)
        return SecretBytes(consuming: &bytes)
    }

    /// The stanzas that give `fileKey` to the readers `encryption` names.
    static func stanzas(for encryption: AgeEncryption, fileKey: SecretBytes) throws -> [AgeStanza] {
        switch encryption {
        case .recipients(let recipients):
            guard !recipients.isEmpty else { throw AgeError.invalidKey("at least one age1… recipient is needed") }
            return try recipients.map { try AgeX25519Stanza.wrap(fileKey: fileKey, to: $0) }
        case .passphrase(let passphrase, let workFactor):
            guard !passphrase.isEmpty else { throw AgeError.invalidKey("the passphrase is empty") }
            guard workFactor <= 22 else { throw AgeError.workFactorTooHigh(workFactor) }
            guard workFactor >= 1 else { throw AgeError.invalidKey("the scrypt work factor must be from 1 to 22") }
            return [try AgeScryptStanza.wrap(fileKey: fileKey, passphrase: passphrase, workFactor: workFactor)]
        }
    }

    // MARK: Opening

    /// The file key that `keys` open from `header`'s stanzas. A scrypt stanza (always alone)
    /// needs the passphrase; otherwise every identity is tried on every X25519 stanza, and
    /// stanzas of unknown types are passed over.
    static func open(_ header: AgeHeader, keys: AgeDecryptionKeys) throws -> SecretBytes {
        if let first = header.stanzas.first, first.type == AgeScryptStanza.type {
            guard let passphrase = keys.passphrase else { throw AgeError.passphraseRequired }
            let stanza = try AgeScryptStanza(first)
            guard let fileKey = try stanza.unwrap(passphrase: passphrase, maxWorkFactor: keys.maxWorkFactor) else {
                throw AgeError.wrongPassphrase
            }
            return try checked(fileKey)
        }
        let x25519 = try header.stanzas.filter { $0.type == AgeX25519Stanza.type }.map(AgeX25519Stanza.init)
        if keys.identities.isEmpty && !x25519.isEmpty { throw AgeError.identityRequired }
        for stanza in x25519 {
            for identity in keys.identities {
                if let fileKey = try stanza.unwrap(with: identity) { return try checked(fileKey) }
            }
        }
        throw AgeError.noMatchingIdentity
    }

    /// `fileKey` when it is 16 bytes (the stanza shapes already ensure it).
    private static func checked(_ fileKey: SecretBytes) throws -> SecretBytes {
        guard fileKey.count == AgeFormat.fileKeyLength else { throw AgeError.malformedHeader("the file key is not 16 bytes") }
        return fileKey
    }

    // MARK: Payload

    /// The payload key: HKDF(file key, salt: the payload nonce, info: "payload").
    static func payloadKey(fileKey: SecretBytes, nonce: [UInt8]) throws -> SecretBytes {
        try HKDFSHA256.derive(key: fileKey, salt: nonce, info: "payload", length: ChaCha20Poly1305.keyLength)
    }
}
