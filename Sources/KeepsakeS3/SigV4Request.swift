import Foundation

/// What Signature Version 4 signs of an HTTP request, before any encoding.
///
/// The path and the query are given unencoded: the signer encodes them the way S3
/// expects, so the same encoded forms must be what goes on the wire (see
/// `SigV4URIEncoding`).
public struct SigV4Request: Sendable {
    // MARK: Contents

    /// The HTTP method, e.g. `GET` or `PUT`, used as given.
    public var method: String

    /// The `Host` header's value: the host name, with `:port` when the port is not the
    /// scheme's default (that is what an HTTP client sends, so that is what is signed).
    public var host: String

    /// The path's raw bytes, starting with `/` (an empty path is signed as `/`). Object
    /// keys are bytes, not necessarily UTF-8, and S3 signs them unnormalised.
    public var path: [UInt8]

    /// Query parameters, unencoded and in any order; a parameter without a value (such
    /// as `?lifecycle`) has the empty string as its value.
    public var query: [(name: String, value: String)]

    /// The other headers to sign, in any case and order; a name given more than once is
    /// signed as its values joined by commas, in the order given. `Host`, `Authorization`
    /// and the `x-amz-date`, `x-amz-content-sha256` and `x-amz-security-token` headers
    /// are the signer's to set: any given here are ignored.
    public var headers: [(name: String, value: String)]

    /// The payload's SHA-256 as lowercase hex, or `SigV4Signer.unsignedPayload`.
    public var payloadHash: String

    /// When the request is made; S3 refuses one more than 15 minutes off its clock.
    public var date: Date

    // MARK: Life cycle

    /// A request whose path is given as raw bytes.
    public init(method: String, host: String, path: [UInt8],
                query: [(name: String, value: String)] = [],
                headers: [(name: String, value: String)] = [],
                payloadHash: String, date: Date) {
        self.method = method
        self.host = host
        self.path = path
        self.query = query
        self.headers = headers
        self.payloadHash = payloadHash
        self.date = date
    }

    /// A request whose path is given as an unencoded string (signed as its UTF-8 bytes).
    public init(method: String, host: String, path: String,
                query: [(name: String, value: String)] = [],
                headers: [(name: String, value: String)] = [],
                payloadHash: String, date: Date) {
        self.init(method: method, host: host, path: Array(path.utf8), query: query,
                  headers: headers, payloadHash: payloadHash, date: date)
    }
}
