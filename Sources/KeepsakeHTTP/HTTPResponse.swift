/// The final response to an `HTTPRequest` (never an interim `100 Continue`).
public struct HTTPResponse: Sendable {
    // MARK: Fields

    /// The status code: 4xx and 5xx are responses like any other, not errors.
    public let status: Int
    /// The header fields of the final response, in the order received, with the values
    /// trimmed of surrounding whitespace.
    public let headers: [(name: String, value: String)]
    /// The body when it was collected: the whole body from `perform(_:responseLimit:)`;
    /// from `perform(_:into:)` only a non-2xx body (an error document, at most
    /// `HTTPClient.Settings.errorBodyLimit` bytes), since a 2xx body went to the sink.
    /// Empty for HEAD.
    public let body: [UInt8]

    // MARK: Life cycle

    /// A response with the given parts.
    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    // MARK: Lookup

    /// Whether the status is 2xx.
    public var isSuccess: Bool { (200..<300).contains(status) }

    /// The value of the first header named `name`, compared without regard to ASCII case.
    public func value(forHeader name: String) -> String? {
        headers.first { Self.namesMatch($0.name, name) }?.value
    }

    /// The values of every header named `name` (case-insensitively), in order.
    public func values(forHeader name: String) -> [String] {
        headers.filter { Self.namesMatch($0.name, name) }.map(\.value)
    }

    /// The `Content-Length` header as a number, or nil when absent or not a number.
    public var contentLength: Int? {
        value(forHeader: "Content-Length").flatMap { Int($0) }
    }

    /// Compares header names with ASCII case folding only, as HTTP does (`lowercased()`
    /// would also fold non-ASCII letters, which no header name holds).
    static func namesMatch(_ first: String, _ second: String) -> Bool {
        let one = first.utf8, other = second.utf8
        guard one.count == other.count else { return false }
        return zip(one, other).allSatisfy { foldASCII($0) == foldASCII($1) }
    }

    private static func foldASCII(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
    }
}
