import KeepsakeAge

/// Why an encrypted backup could not be opened or written: a key missing or refused. Never
/// names a secret, only the object and what to give.
public enum EncryptionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The object is encrypted to public keys and no identity was given.
    case identityRequired(name: String)
    /// The object is encrypted with a passphrase and none was given (or could be asked for).
    case passphraseRequired(name: String)
    /// None of the identities given opens the object.
    case noMatchingIdentity(name: String, recipients: [String])
    /// The passphrase given does not open the object.
    case wrongPassphrase(name: String)
    /// A key file, recipient or passphrase given to Keepsake is unusable.
    case unusableKey(String)

    public var description: String {
        switch self {
        case .identityRequired(let name):
            // Never "make a key": a new identity cannot open what was encrypted before it.
            return "\(name) is encrypted to age public keys: give the identity file of one of them with --identity FILE "
                + "(or KEEPSAKE_IDENTITY_FILE, or a profile's identity-file with --profile NAME); 'keepsake list --json' shows "
                + "each backup's recipients"
        case .passphraseRequired(let name):
            return "\(name) is encrypted with a passphrase: give it with --passphrase-file FILE (or KEEPSAKE_PASSPHRASE_FILE), "
                + "or run on a terminal to be asked"
        case .noMatchingIdentity(let name, let recipients):
            let given = recipients.isEmpty ? "" : " (given: \(recipients.joined(separator: ", ")))"
            return "None of the identities given opens \(name)\(given): it is encrypted to other public keys; "
                + "give the identity file that matches ('keepsake list --json' shows each backup's recipients); a new key "
                + "cannot open it"
        case .wrongPassphrase(let name):
            return "The passphrase does not open \(name); check it and try again"
        case .unusableKey(let reason):
            return reason
        }
    }
}

extension AgeRecipient {
    /// Why `text`, given where a public key belongs (`place`: an option or a key), is not
    /// one. A secret key is never repeated back (it may end up in a log).
    public static func misuseMessage(_ text: String, where place: String) -> String {
        if text.uppercased().hasPrefix("AGE-SECRET-KEY-") {
            return "\(place) holds an age identity (a secret key) where its public key belongs: give the age1… public key "
                + "(keepsake keygen printed it; 'age-keygen -y FILE' prints it again) and keep the identity off this machine"
        }
        let shown = text.count > 80 ? String(text.prefix(80)) + "…" : text
        return "\(place) holds '\(shown)', which is not an age public key: give one like age1… (keepsake keygen prints one)"
    }
}
