/// One HTTP/1.1 request for `HTTPClient`: the body, when there is one, is held in memory
/// (the S3 client sends objects in parts of bounded size).
public struct HTTPRequest: Sendable {
    // MARK: Method

    /// The methods the S3 client needs.
    public enum Method: String, Sendable, Equatable, CaseIterable {
        case get = "GET"
        case head = "HEAD"
        case put = "PUT"
        case post = "POST"
        case delete = "DELETE"
    }

    // MARK: Fields

    /// What to do with the resource.
    public var method: Method
    /// An absolute `http://` or `https://` URL, already percent-encoded.
    public var url: String
    /// Header fields, sent in this order. An empty value is sent as an empty field (not
    /// dropped). `Host` and `Content-Length` come from the URL and the body: do not set them.
    public var headers: [(name: String, value: String)]
    /// The bytes to send, or nil for none. PUT and POST always send a `Content-Length`
    /// (zero without a body); HEAD cannot carry a body.
    public var body: [UInt8]?

    // MARK: Life cycle

    /// A request with the given parts.
    public init(method: Method, url: String, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    // MARK: Headers

    /// Whether a header of this name (compared without regard to ASCII case) is present.
    public func hasHeader(_ name: String) -> Bool {
        headers.contains { HTTPResponse.namesMatch($0.name, name) }
    }

    /// Why the header fields cannot be sent as they are, or nil when they can: a name must be
    /// an RFC 9110 token and a value must hold no CR, LF or NUL (which would let a value
    /// smuggle in another header or request).
    func headerProblem() -> String? {
        for (index, field) in headers.enumerated() {
            if field.name.isEmpty || !field.name.utf8.allSatisfy(Self.isTokenByte) {
                return "header \(index + 1) has an invalid name"
            }
            if field.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) {
                // Names only: values may be secrets (Authorization).
                return "the value of header \(field.name) holds a line break or NUL"
            }
        }
        return nil
    }

    /// RFC 9110 `tchar`.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}
