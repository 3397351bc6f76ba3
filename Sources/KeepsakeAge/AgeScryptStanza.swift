/// The scrypt (passphrase) stanza: "-> scrypt <salt> <log2 N>" and the file key sealed under
/// scrypt(passphrase, "age-encryption.org/v1/scrypt" ‖ salt, N, r = 8, p = 1).
struct AgeScryptStanza {
    // MARK: Fields

    static let type = "scrypt"
    private static let saltLabel = Array("age-encryption.org/v1/scrypt".utf8)
    static let saltLength = 16

    /// The 16 random salt bytes.
    let salt: [UInt8]
    /// log2 of scrypt's N.
    let workFactor: Int
    /// The sealed file key (16 bytes and a 16-byte tag).
    let body: [UInt8]

    /// The scrypt fields of `stanza`, which must have the right shape.
    init(_ stanza: AgeStanza) throws {
        guard stanza.arguments.count == 2 else {
            throw AgeError.malformedHeader("a scrypt stanza must have exactly two arguments (salt and work factor)")
        }
        guard let salt = AgeBase64.decode(stanza.arguments[0], count: AgeScryptStanza.saltLength) else {
            throw AgeError.malformedHeader("a scrypt stanza's salt is not 16 bytes of canonical base64")
        }
        // Decimal, no sign, no leading zero: "1" to "99" (anything that big is refused later).
        let digits = Array(stanza.arguments[1].utf8)
        guard (1...2).contains(digits.count), digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), digits[0] != 0x30 else {
            throw AgeError.malformedHeader("a scrypt stanza's work factor is not a decimal number from 1 without leading zeros")
        }
        guard stanza.body.count == AgeFormat.fileKeyLength + ChaCha20Poly1305.tagLength else {
            throw AgeError.malformedHeader("a scrypt stanza's body is not a sealed 16-byte file key")
        }
        self.salt = salt
        workFactor = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        body = stanza.body
    }

    // MARK: Wrapping

    /// A stanza giving `fileKey` to whoever knows `passphrase`.
    static func wrap(fileKey: SecretBytes, passphrase: [UInt8], workFactor: Int) throws -> AgeStanza {
        let salt = try SecureRandom.bytes(saltLength)
        let key = try Scrypt.derive(passphrase: passphrase, salt: saltLabel + salt, logN: workFactor)
        let body = try ChaCha20Poly1305.seal(key: key, plaintext: fileKey)
        return AgeStanza(type: type, arguments: [AgeBase64.encodeString(salt), String(workFactor)], body: body)
    }

    /// The file key when `passphrase` opens this stanza, nil when it does not; refuses a work
    /// factor above `maxWorkFactor` before doing any work.
    func unwrap(passphrase: [UInt8], maxWorkFactor: Int) throws -> SecretBytes? {
        guard workFactor <= maxWorkFactor else { throw AgeError.workFactorTooHigh(workFactor) }
        let key = try Scrypt.derive(passphrase: passphrase, salt: AgeScryptStanza.saltLabel + salt, logN: workFactor)
        return try ChaCha20Poly1305.open(key: key, ciphertext: body)
    }
}
