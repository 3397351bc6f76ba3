import Foundation

/// How to reach an S3-compatible store: the endpoint, the region, the addressing style and
/// the credentials. Built by `S3Configuration.resolve` from the environment, the AWS
/// shared files and a profile's settings; `description` never shows a secret.
public struct S3Configuration: Sendable, CustomStringConvertible {
    // MARK: Fields

    /// `http(s)://host[:port]` without a trailing slash.
    public var endpoint: String
    /// The signing region (`us-east-1` unless told otherwise).
    public var region: String
    /// Bucket in the path (`http://host/bucket/key`), as servers other than AWS expect;
    /// otherwise in the host name (`bucket.s3.region.amazonaws.com`).
    public var pathStyle: Bool
    /// The keys requests are signed with.
    public var credentials: S3Credentials
    /// Where the credentials came from, for messages (`AWS_ACCESS_KEY_ID`, a file and profile).
    public var credentialSource: String
    /// A file of CA certificates to trust (`AWS_CA_BUNDLE`), when not the system's.
    public var caBundle: String?

    /// Creates a configuration.
    public init(endpoint: String, region: String, pathStyle: Bool, credentials: S3Credentials,
                credentialSource: String, caBundle: String? = nil) {
        self.endpoint = endpoint
        self.region = region
        self.pathStyle = pathStyle
        self.credentials = credentials
        self.credentialSource = credentialSource
        self.caBundle = caBundle
    }

    public var description: String {
        "S3Configuration(endpoint: \(endpoint), region: \(region), pathStyle: \(pathStyle), "
            + "accessKeyID: \(credentials.accessKeyID) from \(credentialSource))"
    }

    // MARK: Settings

    /// What a caller may set beyond the environment: `--s3-endpoint`, a profile's keys.
    public struct Overrides: Sendable, Equatable {
        /// `--s3-endpoint`, or a profile's `s3-endpoint`.
        public var endpoint: String?
        /// A profile's `s3-region`.
        public var region: String?
        /// A profile's `aws-profile`: the section of the AWS shared files to read.
        public var awsProfile: String?
        /// A profile's `aws-access-key-id`.
        public var accessKeyID: String?
        /// A profile's `aws-secret-access-key` (read from the configuration file, never argv).
        public var secretAccessKey: String?
        /// A profile's `aws-session-token`.
        public var sessionToken: String?

        /// No overrides.
        public init(endpoint: String? = nil, region: String? = nil, awsProfile: String? = nil, accessKeyID: String? = nil,
                    secretAccessKey: String? = nil, sessionToken: String? = nil) {
            self.endpoint = endpoint
            self.region = region
            self.awsProfile = awsProfile
            self.accessKeyID = accessKeyID
            self.secretAccessKey = secretAccessKey
            self.sessionToken = sessionToken
        }
    }

    // MARK: Resolving

    /// The configuration for `environment` and `overrides`, in the order the AWS tools use:
    /// keys given in the profile, then `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`
    /// (`AWS_SESSION_TOKEN`), then the shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`,
    /// else `~/.aws/credentials`) under `AWS_PROFILE` (else `default`). The endpoint comes
    /// from `--s3-endpoint`, then `KEEPSAKE_S3_ENDPOINT`, else AWS itself; the region from
    /// the profile, `KEEPSAKE_S3_REGION`, `AWS_REGION`, `AWS_DEFAULT_REGION`, the shared
    /// config file, else `us-east-1`. A custom endpoint means path-style addressing unless
    /// `KEEPSAKE_S3_ADDRESSING=virtual`. `~` is `home`, else the environment's `HOME` (as
    /// the AWS tools read it: `HOME=/srv/ci keepsake …` uses `/srv/ci/.aws`), else the
    /// account's home folder.
    public static func resolve(environment: [String: String], overrides: Overrides = Overrides(),
                               home: String? = nil) throws(S3Error) -> S3Configuration {
        let home = home ?? nonEmpty(environment["HOME"]) ?? NSHomeDirectory()
        let givenEndpoint = nonEmpty(overrides.endpoint) ?? nonEmpty(environment["KEEPSAKE_S3_ENDPOINT"])
        // Before the credentials: a wrong address is the first thing to fix.
        if let givenEndpoint, endpointProblem(givenEndpoint) != nil { throw S3Error.badEndpoint(givenEndpoint) }
        let profile = overrides.awsProfile ?? nonEmpty(environment["AWS_PROFILE"]) ?? "default"
        let credentialsFile = nonEmpty(environment["AWS_SHARED_CREDENTIALS_FILE"]) ?? home + "/.aws/credentials"
        let configFile = nonEmpty(environment["AWS_CONFIG_FILE"]) ?? home + "/.aws/config"

        let credentials: S3Credentials
        let source: String
        if let key = nonEmpty(overrides.accessKeyID), let secret = nonEmpty(overrides.secretAccessKey) {
            credentials = S3Credentials(accessKeyID: key, secretAccessKey: secret, sessionToken: overrides.sessionToken)
            source = "the profile's aws-access-key-id"
        } else if let key = nonEmpty(environment["AWS_ACCESS_KEY_ID"]), let secret = nonEmpty(environment["AWS_SECRET_ACCESS_KEY"]) {
            credentials = S3Credentials(accessKeyID: key, secretAccessKey: secret, sessionToken: environment["AWS_SESSION_TOKEN"])
            source = "AWS_ACCESS_KEY_ID"
        } else if let section = IniFile.section(profile, of: credentialsFile),
                  let key = nonEmpty(section["aws_access_key_id"]), let secret = nonEmpty(section["aws_secret_access_key"]) {
            credentials = S3Credentials(accessKeyID: key, secretAccessKey: secret, sessionToken: section["aws_session_token"])
            source = "\(credentialsFile) [\(profile)]"
        } else {
            throw S3Error.noCredentials(profile: profile, file: credentialsFile)
        }

        let configSection = IniFile.section(profile == "default" ? "default" : "profile " + profile, of: configFile)
        let region = nonEmpty(overrides.region) ?? nonEmpty(environment["KEEPSAKE_S3_REGION"]) ?? nonEmpty(environment["AWS_REGION"])
            ?? nonEmpty(environment["AWS_DEFAULT_REGION"]) ?? nonEmpty(configSection?["region"]) ?? "us-east-1"
        var endpoint: String
        var pathStyle: Bool
        if let given = givenEndpoint {
            endpoint = given
            while endpoint.hasSuffix("/") { endpoint.removeLast() }
            pathStyle = environment["KEEPSAKE_S3_ADDRESSING"]?.lowercased() != "virtual"
        } else {
            endpoint = "https://s3.\(region).amazonaws.com"
            pathStyle = environment["KEEPSAKE_S3_ADDRESSING"]?.lowercased() == "path"
        }
        return S3Configuration(endpoint: endpoint, region: region, pathStyle: pathStyle, credentials: credentials,
                               credentialSource: source, caBundle: nonEmpty(environment["AWS_CA_BUNDLE"]))
    }

    /// Why `text` is not an endpoint Keepsake can use (`--s3-endpoint`, a profile's
    /// `s3-endpoint`, `KEEPSAKE_S3_ENDPOINT`), or nil: it must be `http://` or `https://`, a
    /// host (a name, an IPv4 address or a bracketed IPv6 one), an optional port from 1 to
    /// 65535, and nothing after but slashes.
    public static func endpointProblem(_ text: String) -> String? {
        let expected = "give an http:// or https:// URL of a host, like http://127.0.0.1:8333"
        var rest = Substring(text.trimmingCharacters(in: .whitespaces))
        guard let scheme = ["http://", "https://"].first(where: { rest.lowercased().hasPrefix($0) }) else {
            return "it does not start with http:// or https://; \(expected)"
        }
        rest = rest.dropFirst(scheme.count)
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty else { return "it names no host; \(expected)" }
        guard !rest.contains("/"), !rest.contains("?"), !rest.contains("#"), !rest.contains("@") else {
            return "it holds more than a host and a port (a path, a query or a user); \(expected)"
        }
        var host = rest
        var port: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return "its IPv6 address has no closing ']'; \(expected)" }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return "something follows its IPv6 address; \(expected)" }
                port = after.dropFirst()
            }
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                return "'\(host)' is not an IPv6 address; \(expected)"
            }
        } else {
            if let colon = rest.firstIndex(of: ":") {
                host = rest[..<colon]
                port = rest[rest.index(after: colon)...]
            }
            let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
            guard !host.isEmpty, host.allSatisfy({ allowed.contains($0) }) else {
                return "'\(host)' is not a host name or address; \(expected)"
            }
        }
        if let port {
            guard let number = Int(port), (1...65535).contains(number), port.allSatisfy(\.isASCII) else {
                return "its port '\(port)' is not a number from 1 to 65535; \(expected)"
            }
        }
        return nil
    }

    /// `text` as messages may show it: a `user:password@` part is replaced by `***@`, so a
    /// secret written into an endpoint is never printed, even in the error refusing it.
    public static func redacted(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@") else { return text }
        let schemeEnd = text.range(of: "://").map(\.upperBound) ?? text.startIndex
        guard schemeEnd <= at else { return text }
        return String(text[..<schemeEnd]) + "***" + String(text[at...])
    }

    /// True for a plain `http://` endpoint whose host is not this machine (`localhost`,
    /// 127.0.0.0/8, `::1`): requests, their answers and the data cross the network without
    /// encryption, and anyone on the way can read or change them.
    public static func isPlainHTTPToAnotherMachine(_ endpoint: String) -> Bool {
        let text = endpoint.trimmingCharacters(in: .whitespaces).lowercased()
        guard text.hasPrefix("http://") else { return false }
        var host = Substring(text.dropFirst("http://".count))
        if let slash = host.firstIndex(of: "/") { host = host[..<slash] }
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return true }
            return host[host.index(after: host.startIndex)..<close] != "::1"
        }
        if let colon = host.firstIndex(of: ":") { host = host[..<colon] }
        if host == "localhost" || host.hasSuffix(".localhost") { return false }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        let isLoopbackIPv4 = parts.count == 4 && parts.allSatisfy { UInt8($0) != nil } && parts.first == "127"
        return !isLoopbackIPv4
    }

    private static func nonEmpty(_ value: String?) -> String? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        return value
    }
}
