import KeepsakeModel

/// What a backup's signature vouches for, as the exact text that is signed: the backup's
/// name, then each of its objects with its size and the SHA-256 of its stored bytes
/// (ciphertext for an encrypted backup, so anyone can check it without a key):
///
///     keepsake-signature 1
///     backup nas_20261129T023000Z-3f9a1c2e
///     archive nas_20261129T023000Z-3f9a1c2e.tar.zst 301234567 9f86d0…
///     manifest nas_20261129T023000Z-3f9a1c2e.manifest.jsonl.zst 4412 2c26b4…
///     summary nas_20261129T023000Z-3f9a1c2e.summary.json 301 fcde2b…
///
/// Every line ends in a newline; `summary` only for encrypted backups.
public struct SignedStatement: Equatable, Sendable {
    // MARK: Parts

    /// What an object is to the backup, in the order the lines come.
    public enum Role: String, Sendable, CaseIterable {
        case archive, manifest, summary
    }

    /// One stored object the statement names.
    public struct Object: Equatable, Sendable {
        public var role: Role
        public var name: String
        public var size: Int64
        /// Lowercase hex.
        public var sha256: String

        public init(role: Role, name: String, size: Int64, sha256: String) {
            self.role = role
            self.name = name
            self.size = size
            self.sha256 = sha256
        }
    }

    /// The first line, which names the format.
    static let header = "keepsake-signature 1"

    /// The backup's name, `HOST_ID`.
    public var stem: String
    /// Its objects: the archive, the manifest, and an encrypted backup's clear summary.
    public var objects: [Object]

    public init(stem: String, objects: [Object]) {
        self.stem = stem
        self.objects = objects
    }

    /// The object of `role`, if named.
    public func object(_ role: Role) -> Object? { objects.first { $0.role == role } }

    // MARK: Text

    /// The bytes that are signed.
    public var text: String {
        ([Self.header, "backup \(stem)"] + objects.map { "\($0.role.rawValue) \($0.name) \($0.size) \($0.sha256)" })
            .map { $0 + "\n" }.joined()
    }

    /// Reads a statement back; nil unless it is exactly in the form `text` writes: an archive
    /// and a manifest line, a summary line at most, each object named after the backup.
    public init?(parsing text: String) {
        guard text.hasSuffix("\n") else { return nil }
        let lines = text.dropLast().split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count == 4 || lines.count == 5, lines[0] == Self.header, lines[1].hasPrefix("backup ") else { return nil }
        let stem = String(lines[1].dropFirst("backup ".count))
        guard BackupNaming.parts(ofStem: Substring(stem)) != nil else { return nil }
        var objects: [Object] = []
        for (line, role) in zip(lines.dropFirst(2), Role.allCases) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 4, fields[0] == role.rawValue, BackupNaming.stem(of: String(fields[1])) == stem,
                  let size = Int64(fields[2]), size >= 0, String(size) == fields[2],
                  fields[3].count == 64, fields[3].allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else { return nil }
            objects.append(Object(role: role, name: String(fields[1]), size: size, sha256: String(fields[3])))
        }
        self.init(stem: stem, objects: objects)
        guard self.text == text else { return nil }
    }
}
