/// What reading may use to open an age file.
public struct AgeDecryptionKeys: Sendable {
    // MARK: Keys

    /// X25519 identities tried on every X25519 stanza.
    public var identities: [AgeIdentity]
    /// The passphrase for a scrypt stanza.
    public var passphrase: [UInt8]?
    /// The highest scrypt work factor (log2 N) accepted; higher ones are refused before any work.
    public var maxWorkFactor: Int

    /// One above what Keepsake and the age tool write (18): whoever can plant an object can
    /// choose its work factor, and each step doubles the time and memory one try costs
    /// (19: about 512 MiB; age's own limit, 22, took 26 s and 4.2 GB here).
    public static let defaultMaxWorkFactor = 19

    public init(identities: [AgeIdentity] = [], passphrase: [UInt8]? = nil, maxWorkFactor: Int = defaultMaxWorkFactor) {
        self.identities = identities
        self.passphrase = passphrase
        self.maxWorkFactor = maxWorkFactor
    }

    /// True when there is neither an identity nor a passphrase.
    public var isEmpty: Bool { identities.isEmpty && passphrase == nil }
}
