import Foundation
import KeepsakeAge
import KeepsakeSupport

/// The secret half of a signing key pair, held by the host that makes the backups. Stored
/// as an unencrypted PKCS#8 PEM file (RFC 8410), as `openssl genpkey -algorithm ed25519`
/// writes it, with comment lines on top naming the public key.
public final class SigningKey: Sendable {
    // MARK: State

    /// The DER of an Ed25519 PKCS#8 private key up to the seed's 32 bytes.
    static let privateKeyInfoPrefix: [UInt8] = [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70,
                                                0x04, 0x22, 0x04, 0x20]

    private let seed: SecretBytes
    /// The key that checks this key's signatures.
    public let publicKey: SigningPublicKey

    private init(seed: SecretBytes) throws {
        self.seed = seed
        publicKey = SigningPublicKey(bytes: try Ed25519.publicKey(of: seed))
    }

    // MARK: Making and reading

    /// A new random key.
    public static func generate() throws -> SigningKey {
        try SigningKey(seed: try Ed25519.generateSeed())
    }

    /// The key in the file text `bytes` (read from `path`, which messages name).
    /// - Throws: `SigningError.unusableSigningKey`, saying what is wrong.
    public convenience init(fileBytes bytes: [UInt8], path: String) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        let labels = PEMBlock.labels(in: text)
        if labels.contains("ENCRYPTED PRIVATE KEY") {
            throw SigningError.unusableSigningKey(path: path, reason: "it is protected by a passphrase, and an unattended backup "
                + "cannot type one; keep it unencrypted with mode 0600 ('openssl pkey -in OLD -out NEW')")
        }
        guard labels.contains("PRIVATE KEY") else {
            let reason = labels.contains("PUBLIC KEY") || text.contains(SigningPublicKey.prefix)
                ? "it holds a public key, which checks signatures; signing needs the private key it came with"
                : "it holds no PEM private key ('-----BEGIN PRIVATE KEY-----')"
            throw SigningError.unusableSigningKey(path: path, reason: reason)
        }
        guard var der = PEMBlock.decode(label: "PRIVATE KEY", in: text) else {
            throw SigningError.unusableSigningKey(path: path, reason: "its PEM block is not valid base64")
        }
        defer { SecretBytes.wipe(&der) }
        guard der.count == Self.privateKeyInfoPrefix.count + Ed25519.keyLength,
              der.prefix(Self.privateKeyInfoPrefix.count).elementsEqual(Self.privateKeyInfoPrefix) else {
            throw SigningError.unusableSigningKey(path: path, reason: "it is not an Ed25519 key (RSA, ECDSA and Ed448 keys are not used)")
        }
        var seed = Array(der.suffix(Ed25519.keyLength))
        try self.init(seed: SecretBytes(consuming: &seed))
    }

    /// The key file's text: two comment lines (created, public key), then the PEM block.
    public func fileText(created: Date) -> String {
        var der = Self.privateKeyInfoPrefix + seed.array()
        defer { SecretBytes.wipe(&der) }
        return "# Keepsake signing key (Ed25519), created \(Timestamp.iso8601(created))\n"
            + "# public key: \(publicKey.encoded)\n"
            + PEMBlock.render(label: "PRIVATE KEY", der: der)
    }

    // MARK: Signing

    /// The signature of `message`.
    func sign(_ message: [UInt8]) throws -> [UInt8] {
        try Ed25519.sign(message, seed: seed)
    }
}
