/// Why an age file could not be written or read. No case ever carries a secret: reasons
/// name what was expected, never the key, passphrase or line that was given.
public enum AgeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bytes do not start with "age-encryption.org/v1\n".
    case notAgeFile
    /// The header breaks the format; the reason names the rule (no secrets).
    case malformedHeader(String)
    /// The header is fine, but no X25519 stanza opens with the identities given.
    case noMatchingIdentity
    /// A scrypt stanza is there and the passphrase does not open it.
    case wrongPassphrase
    /// The file is passphrase-encrypted and no passphrase was given.
    case passphraseRequired
    /// The file has X25519 stanzas only and no identity was given.
    case identityRequired
    /// The file key opened but the header MAC is wrong: a damaged or tampered header.
    case headerMACMismatch
    /// The scrypt work factor (log2 N) is above the cap the reader accepts.
    case workFactorTooHigh(Int)
    /// A payload chunk fails authentication (or is out of place); chunks count from 0.
    case payloadDamaged(chunk: Int64)
    /// The payload ends before its final chunk.
    case truncated
    /// Bytes follow the final chunk.
    case trailingData
    /// A key's text is not of the form expected; the reason says which form, never the key.
    case invalidKey(String)
    /// Reading or writing the underlying bytes failed.
    case io(String)

    // MARK: CustomStringConvertible

    public var description: String {
        switch self {
        case .notAgeFile:
            return "not an age file (it does not start with 'age-encryption.org/v1')"
        case .malformedHeader(let reason):
            return "the age header is malformed: \(reason)"
        case .noMatchingIdentity:
            return "none of the identities given can open this age file"
        case .wrongPassphrase:
            return "the passphrase does not open this age file"
        case .passphraseRequired:
            return "this age file is encrypted with a passphrase, and none was given"
        case .identityRequired:
            return "this age file is encrypted to recipients (age1…), and no identity was given"
        case .headerMACMismatch:
            return "the age header's MAC does not match: the header is damaged or was tampered with"
        case .workFactorTooHigh(let value):
            return "the age file's scrypt work factor \(value) is too high (Keepsake and age write 18, and Keepsake tries "
                + "at most \(AgeDecryptionKeys.defaultMaxWorkFactor)): it was not made by them, and is not opened"
        case .payloadDamaged(let chunk):
            return "the age payload is damaged: chunk \(chunk) fails authentication"
        case .truncated:
            return "the age file is truncated: its payload ends before the final chunk"
        case .trailingData:
            return "the age file has data after its final chunk"
        case .invalidKey(let reason):
            return "invalid age key: \(reason)"
        case .io(let reason):
            return "age I/O failed: \(reason)"
        }
    }
}
