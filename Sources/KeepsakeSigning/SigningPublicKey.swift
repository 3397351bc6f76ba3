import Foundation
import KeepsakeStorage

/// An Ed25519 public key that checks backups' signatures. Written `ed25519:` and the
/// standard base64 of its 32 bytes (what `keepsake keygen --signing` prints), or as a PEM
/// public key (`openssl pkey -in KEY -pubout`). Not a secret: it may go on a command line.
public struct SigningPublicKey: Hashable, Sendable, CustomStringConvertible {
    // MARK: Forms

    /// The one-line form's prefix.
    public static let prefix = "ed25519:"
    /// The DER of an Ed25519 SubjectPublicKeyInfo (RFC 8410) up to the key's 32 bytes.
    static let subjectPublicKeyInfoPrefix: [UInt8] = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00]

    /// The key's 32 bytes.
    public let bytes: [UInt8]

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The one-line form, `ed25519:` and base64.
    public var encoded: String { Self.prefix + Data(bytes).base64EncodedString() }

    public var description: String { encoded }

    /// The PEM form, for `openssl pkeyutl -verify -pubin -inkey FILE`.
    public var pem: String { PEMBlock.render(label: "PUBLIC KEY", der: Self.subjectPublicKeyInfoPrefix + bytes) }

    // MARK: Parsing

    /// The key written in `text`: the one-line form, or a PEM public key (other lines ignored).
    /// - Throws: `SigningError.unusablePublicKey`, saying what is wrong.
    public init(parsing text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix(Self.prefix) {
            guard let data = Data(base64Encoded: String(trimmed.dropFirst(Self.prefix.count))), data.count == Ed25519.keyLength else {
                throw SigningError.unusablePublicKey(text: text, reason: "after 'ed25519:' come 44 characters of base64 (32 bytes)")
            }
            self.init(bytes: Array(data))
            return
        }
        let labels = PEMBlock.labels(in: text)
        if labels.contains("PRIVATE KEY") || labels.contains("ENCRYPTED PRIVATE KEY") {
            throw SigningError.unusablePublicKey(text: "", reason: "it is a secret signing key, which "
                + "belongs only on the host that makes the backups; give its public key (the 'public key:' line at its top)")
        }
        if labels.contains("PUBLIC KEY") {
            guard let der = PEMBlock.decode(label: "PUBLIC KEY", in: text), der.count == Self.subjectPublicKeyInfoPrefix.count + Ed25519.keyLength,
                  Array(der.prefix(Self.subjectPublicKeyInfoPrefix.count)) == Self.subjectPublicKeyInfoPrefix else {
                throw SigningError.unusablePublicKey(text: "", reason: "its PEM public key is not an Ed25519 one")
            }
            self.init(bytes: Array(der.suffix(Ed25519.keyLength)))
            return
        }
        // A key file of Keepsake's own names the public key on a comment line.
        for line in text.split(whereSeparator: \.isNewline) where line.hasPrefix("# public key: ") {
            try self.init(parsing: String(line.dropFirst("# public key: ".count)))
            return
        }
        throw SigningError.unusablePublicKey(text: text, reason: "it is neither 'ed25519:…' nor a PEM public key")
    }

    /// The key `value` is: the one-line form itself, or else the path of a file holding a key
    /// in either form.
    public static func load(_ value: String) throws -> SigningPublicKey {
        if value.hasPrefix(prefix) { return try SigningPublicKey(parsing: value) }
        let source: FileByteSource
        do {
            source = try FileByteSource(path: value)
        } catch {
            throw SigningError.unusablePublicKey(text: value, reason: "it is not an 'ed25519:' key, and no file of that name can be read (\(error))")
        }
        defer { source.close() }
        let bytes: [UInt8]
        do {
            bytes = try source.readAll(limit: 64 << 10)
        } catch {
            throw SigningError.unusablePublicKey(text: value, reason: "the file cannot be read (\(error))")
        }
        do {
            return try SigningPublicKey(parsing: String(decoding: bytes, as: UTF8.self))
        } catch SigningError.unusablePublicKey(_, let reason) {
            // Named by the file, never by its contents (it may be a secret key).
            throw SigningError.unusablePublicKey(text: value, reason: reason)
        }
    }
}
