/// An age X25519 identity: the secret key that opens files encrypted to its recipient,
/// written "AGE-SECRET-KEY-1…". Its `description` never shows the secret.
public struct AgeIdentity: Sendable, CustomStringConvertible {
    // MARK: Key

    /// The 32-byte X25519 private scalar, wiped from memory when the last copy goes.
    let secretKey: SecretBytes
    private let publicRecipient: AgeRecipient

    /// The recipient (public key) that files for this identity are encrypted to.
    public var recipient: AgeRecipient { publicRecipient }

    /// The human-readable part of an identity's bech32 text (written uppercase).
    static let humanPart = "AGE-SECRET-KEY-"

    init(secretKey: SecretBytes) throws {
        self.secretKey = secretKey
        publicRecipient = AgeRecipient(publicKey: try X25519.publicKey(of: secretKey))
    }

    // MARK: Creating

    /// A new random identity.
    public static func generate() throws -> AgeIdentity {
        try AgeIdentity(secretKey: try X25519.generatePrivateKey())
    }

    /// Parses "AGE-SECRET-KEY-1…" (uppercase bech32, as age-keygen writes; lowercase is accepted
    /// too); whitespace around it is trimmed. Errors never include the text.
    public init(parsing text: String) throws {
        let trimmed = AgeRecipient.trimmed(text)
        let expected = "expected an X25519 identity 'AGE-SECRET-KEY-1…' (bech32, 74 characters)"
        guard let decoded = try? Bech32.decode(trimmed), decoded.human == AgeIdentity.humanPart.lowercased(),
              var key = try? Bech32.convertBits(decoded.data, from: 5, to: 8, pad: false) else {
            throw AgeError.invalidKey(expected)
        }
        defer { SecretBytes.wipe(&key) }
        guard key.count == X25519.keyLength else { throw AgeError.invalidKey(expected) }
        try self.init(secretKey: SecretBytes(copying: key))
    }

    // MARK: Text

    /// The secret "AGE-SECRET-KEY-1…" text, for writing key files only.
    public var encoded: String {
        let data = secretKey.withBytes { (try? Bech32.convertBits(Array($0), from: 8, to: 5, pad: true)) ?? [] }
        return Bech32.encode(human: AgeIdentity.humanPart, data: data).uppercased()
    }

    /// "AGE-SECRET-KEY-1… (redacted) for age1…": safe for logs.
    public var description: String { "AGE-SECRET-KEY-1… (redacted) for \(recipient.encoded)" }
}

extension AgeIdentity: CustomDebugStringConvertible {
    /// The same redacted text, so `debugPrint` and string interpolation in tests show no secret.
    public var debugDescription: String { description }
}

extension AgeIdentity: CustomReflectable {
    /// No children: `dump` and the debugger's summaries show the redacted text only.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
