/// Why a backup's signature, or a signing key, was refused.
public enum SigningError: Error, Equatable, CustomStringConvertible {
    /// OpenSSL failed (out of memory, a broken library): not the key's or the backup's fault.
    case crypto(String)
    /// A signing key file (the secret) cannot be read or is not an unencrypted Ed25519 key.
    case unusableSigningKey(path: String, reason: String)
    /// A public key given to check signatures with is not one.
    case unusablePublicKey(text: String, reason: String)
    /// The backup has no signature object.
    case unsigned(backup: String, destination: String, signature: String)
    /// The backup is signed, but by another key than the one given.
    case otherKey(backup: String, signedBy: String, expected: String)
    /// The signature object is malformed, does not verify, or speaks of another backup.
    case forged(backup: String, reason: String)
    /// An object of the backup is not the one its signature names (other bytes, missing).
    case altered(backup: String, object: String, reason: String)

    // MARK: Messages

    public var description: String {
        switch self {
        case .crypto(let reason):
            return "Signing failed inside OpenSSL: \(reason)"
        case .unusableSigningKey(let path, let reason):
            return "The signing key '\(path)' is unusable: \(reason). Make one with 'keepsake keygen --signing --output FILE'"
        case .unusablePublicKey(let text, let reason):
            return "'\(text.count > 80 ? text.prefix(77) + "..." : text)' is not a signing public key: \(reason). Give the 'ed25519:…' line "
                + "'keepsake keygen --signing' printed, or a file that holds it or a PEM public key"
        case .unsigned(let backup, let destination, let signature):
            return "Backup \(backup) is not signed: \(destination) holds no \(signature), and a signature was asked for "
                + "(--signed-by). It may not come from the host that holds the signing key (beside an archive file, keep its "
                + ".signature file with it)"
        case .otherKey(let backup, let signedBy, let expected):
            return "Backup \(backup) is signed by \(signedBy), not by \(expected): it may not come from the host that holds "
                + "the signing key."
        case .forged(let backup, let reason):
            return "The signature of backup \(backup) is not valid (\(reason)): the backup may be forged."
        case .altered(let backup, let object, let reason):
            return "\(object) is not what the signature of backup \(backup) names (\(reason)): the backup was changed after it "
                + "was signed."
        }
    }
}
