/// The result of signing one request: the headers to send and, for checking against
/// AWS's published examples, every intermediate the signature was computed from.
///
/// `canonicalRequest` and `headers` carry the session token when there is one, so the
/// textual forms of this value show only the signed header names and the signature.
public struct SigV4Signature: Sendable {
    // MARK: Headers to send

    /// The headers to add to the request, in this order: `Authorization`, `x-amz-date`,
    /// then `x-amz-content-sha256` and `x-amz-security-token` when they apply.
    public let headers: [(name: String, value: String)]

    /// The `Authorization` header's value.
    public let authorization: String

    // MARK: Intermediates

    /// The canonical request (task 1 of the SigV4 process).
    public let canonicalRequest: String

    /// The string to sign (task 2): algorithm, time, scope and the canonical request's hash.
    public let stringToSign: String

    /// The lowercase names of the signed headers, sorted and joined by `;`.
    public let signedHeaders: String

    /// The signature (task 3): 64 lowercase hex digits.
    public let signature: String
}

// MARK: - Redacted text

extension SigV4Signature: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The signed header names and the signature; never the token-bearing parts.
    public var description: String {
        "SigV4Signature(signedHeaders: \(signedHeaders), signature: \(signature))"
    }

    /// The same as `description`.
    public var debugDescription: String { description }

    /// A mirror with the same two fields, so `dump` cannot show the token either.
    public var customMirror: Mirror {
        Mirror(self, children: ["signedHeaders": signedHeaders, "signature": signature], displayStyle: .struct)
    }
}
