/// What can go wrong with an S3-compatible store. Every message names the endpoint,
/// bucket and key involved and what to do; none holds a secret.
public enum S3Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// No credentials anywhere Keepsake looks.
    case noCredentials(profile: String, file: String)
    /// `--s3-endpoint` / `KEEPSAKE_S3_ENDPOINT` is not an http(s) URL of a host.
    case badEndpoint(String)
    /// The server answered with an error document (or a bare status).
    case server(status: Int, code: String, message: String, operation: String, endpoint: String, bucket: String, key: String)
    /// No answer after the last retry (connection refused, reset, timed out).
    case unreachable(reason: String, operation: String, endpoint: String, bucket: String, key: String, attempts: Int)
    /// The answer was not what S3 sends (no upload id, a short body, a bad checksum).
    case unexpected(reason: String, operation: String, endpoint: String, bucket: String, key: String)

    public var description: String {
        switch self {
        case .noCredentials(let profile, let file):
            return "No S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or put aws_access_key_id and "
                + "aws_secret_access_key under [\(profile)] in \(file) (AWS_PROFILE picks another section)"
        case .badEndpoint(let text):
            return "The S3 endpoint '\(S3Configuration.redacted(text))' is not usable: \(S3Configuration.endpointProblem(text) ?? "it is not an http:// or https:// URL of a host"); "
                + "check --s3-endpoint or KEEPSAKE_S3_ENDPOINT"
        case .server(let status, let code, let message, let operation, let endpoint, let bucket, let key):
            let what = "\(operation) \(S3Error.place(bucket: bucket, key: key)) at \(endpoint)"
            let detail = message.isEmpty ? code : "\(code): \(message)"
            switch (status, code) {
            case (_, "NoSuchBucket"):
                return "The bucket '\(bucket)' does not exist at \(endpoint) (\(operation)); create it first, or check the name"
            case (403, _), (_, "SignatureDoesNotMatch"), (_, "InvalidAccessKeyId"):
                return "Access denied: \(what) (HTTP \(status) \(detail)); check the access key and secret "
                    + "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ~/.aws/credentials) and that they may use the bucket"
            default:
                return "\(what) failed with HTTP \(status)\(detail.isEmpty ? "" : " (\(detail))")"
            }
        case .unreachable(let reason, let operation, let endpoint, let bucket, let key, let attempts):
            return "\(endpoint) gave no usable answer to \(operation) \(S3Error.place(bucket: bucket, key: key)) in \(attempts) "
                + "attempt\(attempts == 1 ? "" : "s") (the last: \(reason)); check the endpoint and the network, or try again later"
        case .unexpected(let reason, let operation, let endpoint, let bucket, let key):
            return "Unexpected answer from \(endpoint) to \(operation) \(S3Error.place(bucket: bucket, key: key)): \(reason)"
        }
    }

    /// `s3://bucket/key`, for messages.
    static func place(bucket: String, key: String) -> String {
        key.isEmpty ? "s3://\(bucket)" : "s3://\(bucket)/\(key)"
    }
}
