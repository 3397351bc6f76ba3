/// The X25519 recipient stanza: "-> X25519 <ephemeral share>" and the file key sealed
/// under HKDF(shared secret, salt: share ‖ recipient, info: "age-encryption.org/v1/X25519").
struct AgeX25519Stanza {
    // MARK: Fields

    static let type = "X25519"
    private static let info = "age-encryption.org/v1/X25519"

    /// The sender's ephemeral public key.
    let share: [UInt8]
    /// The sealed file key (16 bytes and a 16-byte tag).
    let body: [UInt8]

    /// The X25519 fields of `stanza`, which must have the right shape.
    init(_ stanza: AgeStanza) throws {
        guard stanza.arguments.count == 1 else {
            throw AgeError.malformedHeader("an X25519 stanza must have exactly one argument")
        }
        guard stanza.arguments[0].utf8.count == 43, let share = AgeBase64.decode(stanza.arguments[0], count: X25519.keyLength) else {
            throw AgeError.malformedHeader("an X25519 stanza's share is not 32 bytes of canonical base64")
        }
        guard stanza.body.count == AgeFormat.fileKeyLength + ChaCha20Poly1305.tagLength else {
            throw AgeError.malformedHeader("an X25519 stanza's body is not a sealed 16-byte file key")
        }
        self.share = share
        body = stanza.body
    }

    // MARK: Wrapping

    /// A stanza giving `fileKey` to `recipient`, with a fresh ephemeral key.
    static func wrap(fileKey: SecretBytes, to recipient: AgeRecipient) throws -> AgeStanza {
        let ephemeral = try X25519.generatePrivateKey()
        let share = try X25519.publicKey(of: ephemeral)
        guard let shared = try X25519.sharedSecret(privateKey: ephemeral, peer: recipient.publicKey) else {
            throw AgeError.invalidKey("the recipient is a low-order X25519 point, not an age1… public key")
        }
        let key = try HKDFSHA256.derive(key: shared, salt: share + recipient.publicKey, info: info, length: 32)
        let body = try ChaCha20Poly1305.seal(key: key, plaintext: fileKey)
        return AgeStanza(type: type, arguments: [AgeBase64.encodeString(share)], body: body)
    }

    /// The file key when `identity` opens this stanza, nil when it does not.
    func unwrap(with identity: AgeIdentity) throws -> SecretBytes? {
        guard let shared = try X25519.sharedSecret(privateKey: identity.secretKey, peer: share) else {
            // Every identity gets an all-zero secret from a low-order share: the stanza itself is bad.
            throw AgeError.malformedHeader("an X25519 stanza's share is a low-order point")
        }
        let key = try HKDFSHA256.derive(key: shared, salt: share + identity.recipient.publicKey, info: AgeX25519Stanza.info, length: 32)
        return try ChaCha20Poly1305.open(key: key, ciphertext: body)
    }
}
