import KeepsakeJSON

/// How a backup's archive and manifest are encrypted (age v1): to public keys, or with a
/// passphrase. Recorded in its summary, in the clear beside it too, so `list` says which key
/// opens a backup without holding one, and a chain never mixes keys.
public enum BackupEncryption: Sendable, Equatable {
    /// X25519 recipients (`age1…` public keys, in the order given).
    case recipients([String])
    /// age's scrypt recipient: a passphrase.
    case passphrase

    // MARK: Describing

    /// How `list` and messages say it: `age, 2 recipients`, `age, passphrase`.
    public var label: String {
        switch self {
        case .recipients(let keys): return "age, \(keys.count) recipient\(keys.count == 1 ? "" : "s")"
        case .passphrase: return "age, passphrase"
        }
    }

    /// True when a backup encrypted like `other` may be incremental on one encrypted like
    /// this: the same kind, and for public keys the same set of keys (an identity that opens
    /// the new backup then opens every archive it relies on).
    public func canShareChain(with other: BackupEncryption) -> Bool {
        switch (self, other) {
        case (.passphrase, .passphrase): return true
        case (.recipients(let mine), .recipients(let theirs)): return Set(mine) == Set(theirs)
        default: return false
        }
    }

    // MARK: Encoding

    /// `{"format":"age","recipients":[…]}` or `{"format":"age","passphrase":true}`.
    public var json: JSONValue {
        switch self {
        case .recipients(let keys):
            return .object(JSONObject([("format", .string("age")), ("recipients", .array(keys.map { .string($0) }))]))
        case .passphrase:
            return .object(JSONObject([("format", .string("age")), ("passphrase", .bool(true))]))
        }
    }

    /// Reads the summary's `encryption` value; nil when it is not one.
    public init?(json: JSONValue) {
        guard json["format"]?.stringValue == "age" else { return nil }
        if json["passphrase"] == .bool(true) {
            self = .passphrase
            return
        }
        guard let keys = json["recipients"]?.arrayValue else { return nil }
        let texts = keys.compactMap(\.stringValue)
        guard texts.count == keys.count, !texts.isEmpty else { return nil }
        self = .recipients(texts)
    }
}
