/// Who can open what is written.
public enum AgeEncryption: Sendable {
    /// One X25519 stanza per recipient (at least one).
    case recipients([AgeRecipient])
    /// One scrypt stanza (age allows no other stanza beside it); `workFactor` is log2 N, 18 by default.
    case passphrase([UInt8], workFactor: Int = 18)
}
