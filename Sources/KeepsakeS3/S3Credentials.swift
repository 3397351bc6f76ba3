/// The keys an S3 request is signed with: an access key pair and, for temporary
/// credentials, a session token.
///
/// Every textual form (`description`, `debugDescription`, the mirror that `dump` and
/// test failures print) shows the access key ID only: the secret and the token must
/// never reach a log, a message or a crash report.
public struct S3Credentials: Sendable {
    // MARK: Keys

    /// The public half of the key pair, e.g. `AKIAIOSFODNN7EXAMPLE`; safe to show.
    public let accessKeyID: String

    /// The secret half; it keys the signature and is never sent or shown.
    public let secretAccessKey: String

    /// The token of temporary (STS) credentials, sent as `x-amz-security-token`.
    public let sessionToken: String?

    // MARK: Life cycle

    /// Credentials from their parts; an empty token counts as none.
    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = (sessionToken?.isEmpty ?? true) ? nil : sessionToken
    }
}

// MARK: - Redacted text

extension S3Credentials: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The key ID and whether there is a token; never the secret or the token.
    public var description: String {
        let token = sessionToken == nil ? "none" : "<redacted>"
        return "S3Credentials(accessKeyID: \(accessKeyID), secretAccessKey: <redacted>, sessionToken: \(token))"
    }

    /// The same as `description`: debug output is logged too.
    public var debugDescription: String { description }

    /// A mirror without the secret fields, so `dump` and reflection cannot show them.
    public var customMirror: Mirror {
        Mirror(self, children: [
            "accessKeyID": accessKeyID,
            "secretAccessKey": "<redacted>",
            "sessionToken": sessionToken == nil ? "none" : "<redacted>",
        ], displayStyle: .struct)
    }
}
