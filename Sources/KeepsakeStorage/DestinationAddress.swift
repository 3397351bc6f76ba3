import Foundation

/// Where backups live, as `--dest`, `KEEPSAKE_DEST` or a profile's `destination` names it:
/// a local folder, a prefix in an S3-compatible bucket, or a path on an rclone remote.
///
/// Anything that starts like a URL (`word:`) must be one of the forms Keepsake knows: a
/// typo such as `s3:/bucket` or a scheme it does not speak (`sftp://`, `gs://`) is refused
/// with the forms listed, never taken for the name of a local folder. A local folder whose
/// name has a colon in it is written `./name:with:colons`.
public enum DestinationAddress: Sendable, Equatable, CustomStringConvertible {
    /// A folder on a local or mounted file system (an absolute path).
    case localFolder(path: String)
    /// Objects under `prefix` (no leading or trailing slash; empty for the whole bucket).
    case s3(bucket: String, prefix: String)
    /// A path on an rclone remote (`remote` as in rclone's configuration, `path` may be empty).
    case rclone(remote: String, path: String)

    // MARK: Forms

    /// The forms a destination can take, for messages.
    public static let forms = ["a folder (/srv/backups, ./backups, ~/backups)", "s3://BUCKET/PREFIX", "rclone:REMOTE:PATH"]

    /// The destination as people write it.
    public var description: String {
        switch self {
        case .localFolder(let path): return path
        case .s3(let bucket, let prefix): return prefix.isEmpty ? "s3://\(bucket)" : "s3://\(bucket)/\(prefix)"
        case .rclone(let remote, let path): return "rclone:\(remote):\(path)"
        }
    }

    /// True for destinations on another machine (object storage, rclone remotes).
    public var isRemote: Bool {
        if case .localFolder = self { return false }
        return true
    }

    // MARK: Parsing

    /// Reads a destination. Relative folders are taken from `workingDirectory`, `~/` from `home`.
    public static func parse(_ text: String, workingDirectory: String, home: String) throws(DestinationAddressError) -> DestinationAddress {
        guard !text.isEmpty else { throw DestinationAddressError(text: text, problem: "it is empty") }
        guard !text.contains("\0") else { throw DestinationAddressError(text: text, problem: "it holds a NUL byte") }
        if let scheme = scheme(of: text) {
            return try parseURL(text, scheme: scheme)
        }
        if text.hasPrefix("/") { return .localFolder(path: text) }
        if text == "~" || text.hasPrefix("~/") { return .localFolder(path: home + text.dropFirst()) }
        let base = workingDirectory.hasSuffix("/") ? String(workingDirectory.dropLast()) : workingDirectory
        return .localFolder(path: base + "/" + text)
    }

    /// The scheme of a text that starts like a URL or an rclone remote (`word:`), lowercased.
    package static func scheme(of text: String) -> String? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let word = text[..<colon]
        // A letter, then letters, digits, '+', '.' or '-' (RFC 3986); `2026:…` is no scheme.
        guard let first = word.unicodeScalars.first, ("a"..."z").contains(first) || ("A"..."Z").contains(first),
              word.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                  || "+.-".unicodeScalars.contains($0) })
        else { return nil }
        return word.lowercased()
    }

    private static func parseURL(_ text: String, scheme: String) throws(DestinationAddressError) -> DestinationAddress {
        let rest = String(text.dropFirst(scheme.count + 1))
        switch scheme {
        case "s3":
            guard rest.hasPrefix("//") else {
                let body = rest.drop { $0 == "/" }
                throw DestinationAddressError(text: text, problem: "an S3 destination is written s3://BUCKET/PREFIX",
                                              suggestion: body.isEmpty ? nil : "s3://\(body)")
            }
            return try parseS3(text, body: String(rest.dropFirst(2)))
        case "rclone":
            return try parseRclone(text, body: rest)
        case "file":
            guard rest.hasPrefix("///") else {
                throw DestinationAddressError(text: text, problem: "a file URL is written file:///absolute/path")
            }
            let path = String(rest.dropFirst(2))
            guard let decoded = path.removingPercentEncoding else {
                throw DestinationAddressError(text: text, problem: "its %-escapes are not valid")
            }
            return .localFolder(path: decoded.count > 1 && decoded.hasSuffix("/") ? String(decoded.dropLast()) : decoded)
        default:
            let known = rest.hasPrefix("//") ? "Keepsake does not speak '\(scheme)://'" : "'\(scheme):' is not a destination Keepsake knows"
            var problem = known
            if ["sftp", "ssh", "scp", "gs", "gcs", "azure", "b2", "webdav", "dav", "ftp", "swift"].contains(scheme) {
                problem += "; reach it through an rclone remote (rclone:REMOTE:PATH, see 'rclone config')"
            }
            throw DestinationAddressError(text: text, problem: problem, mayBeLocalFolder: true)
        }
    }

    private static func parseS3(_ text: String, body: String) throws(DestinationAddressError) -> DestinationAddress {
        let parts = body.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let bucket = parts.first.map(String.init) ?? ""
        guard isValidBucket(bucket) else {
            throw DestinationAddressError(text: text, problem: bucket.isEmpty ? "it names no bucket"
                : "'\(bucket)' is not a bucket name (3 to 63 lowercase letters, digits, dots and hyphens)")
        }
        var prefix = parts.count > 1 ? String(parts[1]) : ""
        while prefix.hasSuffix("/") { prefix.removeLast() }
        let components = prefix.split(separator: "/", omittingEmptySubsequences: false)
        if !prefix.isEmpty, let bad = components.first(where: { $0.isEmpty || $0 == "." || $0 == ".." }) {
            throw DestinationAddressError(text: text, problem: bad.isEmpty ? "its prefix has an empty part ('//')"
                : "its prefix has a '\(bad)' part")
        }
        return .s3(bucket: bucket, prefix: prefix)
    }

    private static func parseRclone(_ text: String, body: String) throws(DestinationAddressError) -> DestinationAddress {
        guard let colon = body.firstIndex(of: ":") else {
            throw DestinationAddressError(text: text, problem: "an rclone destination is written rclone:REMOTE:PATH "
                + "(the remote's name from 'rclone config', a colon, then the path on it)")
        }
        let remote = String(body[..<colon])
        let path = String(body[body.index(after: colon)...])
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "_-.+@ "))
        guard !remote.isEmpty, !remote.hasPrefix("-"), !remote.hasPrefix(" "),
              remote.unicodeScalars.allSatisfy({ $0.isASCII && allowed.contains($0) }) else {
            throw DestinationAddressError(text: text, problem: remote.isEmpty ? "it names no rclone remote"
                : "'\(remote)' is not an rclone remote name (letters, digits, '_', '-', '.', '+', '@' and spaces)")
        }
        guard !path.contains("\n") else { throw DestinationAddressError(text: text, problem: "its path holds a line break") }
        var trimmed = path
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        return .rclone(remote: remote, path: trimmed)
    }

    /// S3's rules for bucket names (the common subset every S3-compatible server accepts).
    static func isValidBucket(_ name: String) -> Bool {
        let scalars = Array(name.unicodeScalars)
        guard (3...63).contains(scalars.count) else { return false }
        let lowerOrDigit: (Unicode.Scalar) -> Bool = { ("a"..."z").contains($0) || ("0"..."9").contains($0) }
        guard let first = scalars.first, let last = scalars.last, lowerOrDigit(first), lowerOrDigit(last) else { return false }
        return scalars.allSatisfy { lowerOrDigit($0) || $0 == "-" || $0 == "." } && !name.contains("..")
    }
}

/// A destination that is not one of the forms Keepsake knows.
public struct DestinationAddressError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was given.
    public var text: String
    /// What is wrong with it.
    public var problem: String
    /// What was probably meant, if anything.
    public var suggestion: String?
    /// Whether a local folder of that name could have been meant (an unknown `word:`).
    public var mayBeLocalFolder: Bool

    /// Creates the error.
    public init(text: String, problem: String, suggestion: String? = nil, mayBeLocalFolder: Bool = false) {
        self.text = text
        self.problem = problem
        self.suggestion = suggestion
        self.mayBeLocalFolder = mayBeLocalFolder
    }

    public var description: String {
        var message = "The destination '\(text)' is not one Keepsake can use: \(problem)."
        if let suggestion { message += " Did you mean '\(suggestion)'?" }
        message += " A destination is " + DestinationAddress.forms.joined(separator: ", or ")
        if mayBeLocalFolder { message += "; write './\(text)' for a local folder of that name" }
        return message
    }
}
