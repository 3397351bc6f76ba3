import Foundation

/// This machine's and this user's names, read once.
public enum HostIdentity {
    /// The host name (`gethostname`), or `localhost`.
    public static let hostName: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let name = PathBytes.fromCString(buffer).flatMap(PathBytes.validString) ?? ""
        return name.isEmpty ? "localhost" : name
    }()

    /// The effective user's name, or the numeric id.
    public static let userName: String = {
        UserNames.shared.userName(for: geteuid()) ?? String(geteuid())
    }()

    /// The host name reduced to characters safe in a file name.
    public static var fileSafeHostName: String { fileSafe(hostName) }

    /// Why `name` cannot be given as a host name (`backup --host`, a profile's `host`), or nil:
    /// it must be its own file-safe form (letters, digits, `-` and `.`, at most 64), so that
    /// the name in a backup's summary and the one in its file names are the same.
    public static func problem(with name: String) -> String? {
        guard !name.isEmpty else { return "a host name cannot be empty" }
        guard fileSafe(name) == name else {
            return "'\(name)' is not a host name Keepsake can use: give letters, digits, '-' and '.' (at most 64)"
        }
        return nil
    }

    /// A host name reduced to characters safe in a file name (as archive names use it).
    public static func fileSafe(_ hostName: String) -> String {
        let safe = hostName.map { character -> Character in
            character.isASCII && (character.isLetter || character.isNumber || character == "-" || character == ".")
                ? character : "-"
        }
        return String(safe.prefix(64))
    }
}
