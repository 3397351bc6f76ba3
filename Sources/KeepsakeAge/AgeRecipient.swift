/// An age X25519 recipient: the public key a file is encrypted to, written "age1…".
public struct AgeRecipient: Sendable, Hashable, CustomStringConvertible {
    // MARK: Key

    /// The 32-byte X25519 public key.
    let publicKey: [UInt8]

    /// The human-readable part of a recipient's bech32 text.
    static let humanPart = "age"

    init(publicKey: [UInt8]) {
        self.publicKey = publicKey
    }

    // MARK: Text

    /// Parses "age1…" (bech32 of a 32-byte X25519 public key); whitespace around it is trimmed.
    public init(parsing text: String) throws {
        let trimmed = AgeRecipient.trimmed(text)
        let expected = "expected an X25519 recipient 'age1…' (bech32, 62 characters)"
        guard let decoded = try? Bech32.decode(trimmed), decoded.human == AgeRecipient.humanPart,
              let key = try? Bech32.convertBits(decoded.data, from: 5, to: 8, pad: false), key.count == X25519.keyLength else {
            throw AgeError.invalidKey(expected)
        }
        publicKey = key
    }

    /// The canonical lowercase "age1…" text.
    public var encoded: String {
        // 32 bytes always regroup into 5-bit values.
        let data = (try? Bech32.convertBits(publicKey, from: 8, to: 5, pad: true)) ?? []
        return Bech32.encode(human: AgeRecipient.humanPart, data: data)
    }

    public var description: String { encoded }

    // MARK: Helpers

    /// `text` without the spaces, tabs and line breaks around it.
    static func trimmed(_ text: String) -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        var slice = Substring(text)
        while let first = slice.first, isSpace(first) { slice.removeFirst() }
        while let last = slice.last, isSpace(last) { slice.removeLast() }
        return String(slice)
    }
}
