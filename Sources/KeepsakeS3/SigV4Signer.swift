import Foundation
import KeepsakeHashing
import KeepsakeSupport

/// Signs HTTP requests with AWS Signature Version 4 (`AWS4-HMAC-SHA256`) in the
/// `Authorization` header, the way S3 and S3-compatible stores check them.
///
/// The process, as the specification lays it out:
/// 1. the canonical request: method, encoded path, sorted encoded query, the signed
///    headers (lowercase names, trimmed values, sorted), their names, the payload hash;
/// 2. the string to sign: algorithm, time, credential scope
///    (`date/region/service/aws4_request`) and the canonical request's SHA-256;
/// 3. the signature: HMAC-SHA256 of that string under a key derived from the secret
///    through the date, region and service.
///
/// S3's rules are used throughout: the path is encoded once and never normalised.
public struct SigV4Signer: Sendable {
    // MARK: Constants

    /// The algorithm named in the string to sign and the `Authorization` header.
    public static let algorithm = "AWS4-HMAC-SHA256"

    /// The payload hash to sign when the body is not hashed (S3 accepts it over HTTPS).
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"

    /// The last element of every credential scope.
    private static let scopeTerminator = "aws4_request"

    /// Headers the signer sets itself; a caller's copies would be signed twice or wrongly.
    private static let reservedHeaders: Set<String> = [
        "authorization", "host", "x-amz-content-sha256", "x-amz-date", "x-amz-security-token",
    ]

    // MARK: Configuration

    /// The keys requests are signed with.
    public let credentials: S3Credentials

    /// The region of the credential scope, e.g. `us-east-1`.
    public let region: String

    /// The service of the credential scope: `s3` for S3.
    public let service: String

    /// Whether `x-amz-content-sha256` is sent and signed. S3 requires it; AWS's generic
    /// test suite signs most requests without it, hence the switch.
    public let sendsContentHash: Bool

    // MARK: Life cycle

    /// A signer for `service` in `region` with `credentials`.
    public init(credentials: S3Credentials, region: String, service: String = "s3",
                sendsContentHash: Bool = true) {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.sendsContentHash = sendsContentHash
    }

    // MARK: Signing

    /// Signs `request`: the headers to add and the intermediates they came from.
    public func sign(_ request: SigV4Request) -> SigV4Signature {
        let time = SigV4Timestamp(request.date)
        let headers = canonicalHeaders(of: request, amzDate: time.amzDate)
        let canonical = [
            request.method,
            canonicalURI(request.path),
            Self.canonicalQuery(request.query),
            headers.lines,
            headers.signedNames,
            request.payloadHash,
        ].joined(separator: "\n")
        let scope = credentialScope(dateStamp: time.dateStamp)
        let toSign = [
            Self.algorithm, time.amzDate, scope, SHA256Hasher.hex(of: Array(canonical.utf8)),
        ].joined(separator: "\n")
        let signature = HexEncoding.encode(
            HMACSHA256.mac(key: signingKey(dateStamp: time.dateStamp), message: toSign))
        let authorization = "\(Self.algorithm) Credential=\(credentials.accessKeyID)/\(scope), "
            + "SignedHeaders=\(headers.signedNames), Signature=\(signature)"

        var added: [(name: String, value: String)] = [
            (name: "Authorization", value: authorization),
            (name: "x-amz-date", value: time.amzDate),
        ]
        if sendsContentHash { added.append((name: "x-amz-content-sha256", value: request.payloadHash)) }
        if let token = credentials.sessionToken { added.append((name: "x-amz-security-token", value: token)) }
        return SigV4Signature(headers: added, authorization: authorization, canonicalRequest: canonical,
                              stringToSign: toSign, signedHeaders: headers.signedNames,
                              signature: signature)
    }

    /// The headers to add to a request (`Authorization`, `x-amz-date`, and
    /// `x-amz-content-sha256` and `x-amz-security-token` when they apply). The path is
    /// raw bytes; the path and query are unencoded (see `SigV4Request`).
    public func authorizationHeaders(method: String, host: String, path: [UInt8],
                                     query: [(name: String, value: String)] = [],
                                     headers: [(name: String, value: String)] = [],
                                     payloadHash: String, date: Date) -> [(name: String, value: String)] {
        sign(SigV4Request(method: method, host: host, path: path, query: query, headers: headers,
                          payloadHash: payloadHash, date: date)).headers
    }

    /// The same, with the path as an unencoded string.
    public func authorizationHeaders(method: String, host: String, path: String,
                                     query: [(name: String, value: String)] = [],
                                     headers: [(name: String, value: String)] = [],
                                     payloadHash: String, date: Date) -> [(name: String, value: String)] {
        authorizationHeaders(method: method, host: host, path: Array(path.utf8), query: query,
                             headers: headers, payloadHash: payloadHash, date: date)
    }

    // MARK: Pieces, for checking against published examples

    /// The canonical request of `request`.
    public func canonicalRequest(for request: SigV4Request) -> String { sign(request).canonicalRequest }

    /// The string to sign of `request`.
    public func stringToSign(for request: SigV4Request) -> String { sign(request).stringToSign }

    /// The signature of `request`, as 64 lowercase hex digits.
    public func signature(for request: SigV4Request) -> String { sign(request).signature }

    /// `date/region/service/aws4_request`.
    func credentialScope(dateStamp: String) -> String {
        [dateStamp, region, service, Self.scopeTerminator].joined(separator: "/")
    }

    /// The key of one day, region and service, derived from the secret by chained HMACs.
    func signingKey(dateStamp: String) -> [UInt8] {
        let secret = Array("AWS4\(credentials.secretAccessKey)".utf8)
        let dateKey = HMACSHA256.mac(key: secret, message: dateStamp)
        let regionKey = HMACSHA256.mac(key: dateKey, message: region)
        let serviceKey = HMACSHA256.mac(key: regionKey, message: service)
        return HMACSHA256.mac(key: serviceKey, message: Self.scopeTerminator)
    }

    // MARK: Canonical forms

    /// The encoded path; one without a leading `/` is signed as if it had one, as the
    /// request line always carries it.
    func canonicalURI(_ path: [UInt8]) -> String {
        if let first = path.first, first != UInt8(ascii: "/") {
            return SigV4URIEncoding.path([UInt8(ascii: "/")] + path)
        }
        return SigV4URIEncoding.path(path)
    }

    /// `name=value` pairs, both encoded, sorted by encoded name and then value (byte
    /// order), joined by `&`; a parameter without a value keeps its `=`.
    static func canonicalQuery(_ query: [(name: String, value: String)]) -> String {
        let encoded = query.map {
            (name: SigV4URIEncoding.queryComponent($0.name), value: SigV4URIEncoding.queryComponent($0.value))
        }
        let sorted = encoded.sorted { left, right in
            if left.name != right.name { return left.name.utf8.lexicographicallyPrecedes(right.name.utf8) }
            return left.value.utf8.lexicographicallyPrecedes(right.value.utf8)
        }
        return sorted.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    }

    /// The canonical header lines (each `name:value` and a newline) and the signed
    /// names: the request's headers plus `host`, `x-amz-date` and, when they apply,
    /// `x-amz-content-sha256` and `x-amz-security-token`.
    private func canonicalHeaders(of request: SigV4Request, amzDate: String) -> (lines: String, signedNames: String) {
        var values: [String: [String]] = [:]
        for header in request.headers {
            let name = header.name.lowercased()
            if Self.reservedHeaders.contains(name) { continue }
            values[name, default: []].append(Self.canonicalValue(header.value))
        }
        values["host"] = [Self.canonicalValue(request.host)]
        values["x-amz-date"] = [amzDate]
        if sendsContentHash { values["x-amz-content-sha256"] = [request.payloadHash] }
        if let token = credentials.sessionToken { values["x-amz-security-token"] = [Self.canonicalValue(token)] }

        let names = values.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        var lines = ""
        for name in names {
            lines += name + ":" + (values[name] ?? []).joined(separator: ",") + "\n"
        }
        return (lines: lines, signedNames: names.joined(separator: ";"))
    }

    /// A header value with the whitespace at its ends removed and every inner run of
    /// whitespace (folded lines included) turned into one space.
    static func canonicalValue(_ value: String) -> String {
        var out = [UInt8]()
        out.reserveCapacity(value.utf8.count)
        var pendingSpace = false
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n"):
                pendingSpace = !out.isEmpty
            default:
                if pendingSpace { out.append(UInt8(ascii: " ")) }
                pendingSpace = false
                out.append(byte)
            }
        }
        // Whole UTF-8 sequences were copied (only ASCII whitespace was dropped).
        return String(decoding: out, as: UTF8.self)
    }
}

// MARK: - Redacted text

extension SigV4Signer: CustomStringConvertible {
    /// The scope and the key ID; the credentials' own description redacts the rest.
    public var description: String {
        "SigV4Signer(accessKeyID: \(credentials.accessKeyID), region: \(region), service: \(service))"
    }
}
