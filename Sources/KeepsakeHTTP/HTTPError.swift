import Foundation

/// Why an HTTP request got no response. It names the method and the URL (with any user
/// name, password and signing parameters in it masked) but never a header value, since
/// the Authorization header holds a signature.
public struct HTTPError: Error, Sendable, Equatable, CustomStringConvertible {
    // MARK: Kinds

    /// What went wrong.
    public enum Kind: Sendable, Equatable {
        /// No connection: the name did not resolve, or the host refused or was unreachable.
        case couldNotConnect
        /// The connection took longer than the connect timeout, or the transfer stayed
        /// under the low-speed limit for too long.
        case timedOut
        /// The connection broke (reset, closed early, or no answer at all) mid-transfer.
        case connectionReset
        /// The body was larger than the limit the caller gave.
        case responseTooLarge(limit: Int)
        /// The cancellation hook asked for a stop.
        case cancelled
        /// The request cannot be sent as it is (a malformed URL or header, a body on HEAD).
        case invalidRequest
        /// libcurl could not be set up.
        case unavailable
        /// Any other libcurl failure (TLS, protocol), with its `CURLcode`.
        case curl(code: Int)
    }

    // MARK: Fields

    /// What went wrong.
    public let kind: Kind
    /// The request's method, e.g. `PUT`.
    public let method: String
    /// The request's URL, with credentials masked (see `redacted(_:)`).
    public let url: String
    /// curl's own message, or the reason; never holds header values.
    public let detail: String

    // MARK: Life cycle

    /// An error for a request; `url` is masked here, so the value never holds it as sent.
    public init(_ kind: Kind, method: String, url: String, detail: String = "") {
        self.kind = kind
        self.method = method
        self.url = Self.redacted(url)
        self.detail = detail
    }

    // MARK: Description

    public var description: String {
        let subject = method.isEmpty ? "HTTP" : "\(method) \(url)"
        let what: String
        switch kind {
        case .couldNotConnect: what = "could not connect"
        case .timedOut: what = "timed out"
        case .connectionReset: what = "the connection was reset mid-transfer"
        case .responseTooLarge(let limit): what = "the response is larger than \(limit) bytes"
        case .cancelled: what = "cancelled"
        case .invalidRequest: what = "invalid request"
        case .unavailable: what = "libcurl is unavailable"
        case .curl(let code): what = "curl error \(code)"
        }
        return detail.isEmpty ? "\(subject): \(what)" : "\(subject): \(what) (\(detail))"
    }

    /// Whether sending the same request again may succeed: the network failures, not the
    /// caller's mistakes or a stop.
    public var isTransient: Bool {
        switch kind {
        case .couldNotConnect, .timedOut, .connectionReset: return true
        case .responseTooLarge, .cancelled, .invalidRequest, .unavailable, .curl: return false
        }
    }

    // MARK: Masking

    /// The query parameters whose values are credentials (pre-signed S3 URLs carry them).
    private static let secretParameterWords = ["signature", "credential", "token", "password", "secret"]

    /// `url` with the user information (`user:password@`) and the values of query
    /// parameters whose names mention a signature, credential, token, password or secret
    /// replaced by `***`.
    public static func redacted(_ url: String) -> String {
        var text = Substring(url)
        var fragment = Substring("")
        if let hash = text.firstIndex(of: "#") {
            fragment = text[hash...]
            text = text[..<hash]
        }
        var query: Substring?
        if let mark = text.firstIndex(of: "?") {
            query = text[text.index(after: mark)...]
            text = text[..<mark]
        }
        var result = maskUserInformation(text)
        if let query {
            let pairs = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
                guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
                let name = pair[..<equals].lowercased()
                return secretParameterWords.contains { name.contains($0) } ? "\(pair[..<equals])=***" : String(pair)
            }
            result += "?" + pairs.joined(separator: "&")
        }
        return result + fragment
    }

    /// `scheme://user:password@host/path` → `scheme://***@host/path`.
    private static func maskUserInformation(_ text: Substring) -> String {
        guard let schemeEnd = text.range(of: "://") else { return String(text) }
        let authorityStart = schemeEnd.upperBound
        let authorityEnd = text[authorityStart...].firstIndex(of: "/") ?? text.endIndex
        guard let at = text[authorityStart..<authorityEnd].lastIndex(of: "@") else { return String(text) }
        return String(text[..<authorityStart]) + "***" + String(text[at...])
    }
}
