import Foundation
import KeepsakeJSON

/// A backup's signature object, `HOST_ID.signature`: one JSON line holding the signed
/// statement's text, the Ed25519 signature of exactly those bytes, and the public key that
/// made it (a hint for messages; what checks is the key the reader is given):
///
///     {"keepsake":"signature","format":1,"key":"ed25519:…","statement":"keepsake-signature 1\n…","signature":"…"}
///
/// `key` and `signature` are standard base64 (with padding), so `base64 -d` and
/// `openssl pkeyutl -verify -rawin` check it without Keepsake (docs/formats.md).
public struct BackupSignature: Equatable, Sendable {
    // MARK: State

    /// The largest signature object read (a statement is a few hundred bytes).
    public static let sizeLimit = 64 << 10

    /// The key the object says signed it.
    public var claimedKey: SigningPublicKey
    /// The signed text.
    public var statementText: String
    /// The signature of `statementText`'s UTF-8 bytes.
    public var signature: [UInt8]

    // MARK: Making

    /// Signs `statement` with `key`.
    public init(signing statement: SignedStatement, with key: SigningKey) throws {
        statementText = statement.text
        signature = try key.sign(Array(statementText.utf8))
        claimedKey = key.publicKey
    }

    /// The object's bytes (one line).
    public var bytes: [UInt8] {
        let object: JSONValue = .object(JSONObject([
            ("keepsake", .string("signature")), ("format", .int(1)), ("key", .string(claimedKey.encoded)),
            ("statement", .string(statementText)), ("signature", .string(Data(signature).base64EncodedString())),
        ]))
        return Array((object.serialized() + "\n").utf8)
    }

    // MARK: Reading

    /// Reads a signature object; nil unless it is one (the caller says it is forged).
    public init?(parsing bytes: [UInt8]) {
        guard bytes.count <= Self.sizeLimit, let json = try? JSONParser.parse(bytes), case .object(let object) = json,
              object["keepsake"]?.stringValue == "signature", object["format"]?.int64Value == 1,
              let keyText = object["key"]?.stringValue, keyText.hasPrefix(SigningPublicKey.prefix),
              let key = try? SigningPublicKey(parsing: keyText),
              let statement = object["statement"]?.stringValue,
              let signatureText = object["signature"]?.stringValue, let signature = Data(base64Encoded: signatureText),
              signature.count == Ed25519.signatureLength else { return nil }
        claimedKey = key
        statementText = statement
        self.signature = Array(signature)
    }

    /// Whether `key` made this signature of the statement.
    public func isSigned(by key: SigningPublicKey) -> Bool {
        Ed25519.isValid(signature, of: Array(statementText.utf8), publicKey: key.bytes)
    }
}
