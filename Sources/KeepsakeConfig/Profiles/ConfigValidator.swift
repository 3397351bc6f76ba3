import BackupCore
import Foundation
import KeepsakeAge
import KeepsakeArchive
import KeepsakeModel
import KeepsakeS3
import KeepsakeScan
import KeepsakeSigning
import KeepsakeStorage
import KeepsakeSupport
import KeepsakeTOML

/// Turns the parsed table of a configuration file into profiles, collecting every problem with
/// its position (``ConfigFile`` describes the keys and the messages).
struct ConfigValidator {
    // MARK: Schema

    static let profileKeys = [
        "sources", "destination", "exclude", "exclude-from", "exclude-caches", "exclude-if-present", "one-file-system",
        "compression", "level", "threads", "readers", "tags", "full-every", "full-if-older-than", "ignore-ctime", "ignore-inode",
        "reread", "blocks", "before", "after", "retention", "copy-to", "lock-wait", "s3-endpoint", "s3-region", "aws-profile", "aws-access-key-id",
        "aws-secret-access-key", "aws-session-token", "recipients", "recipients-file", "passphrase-file", "identity-file", "host",
        "signing-key", "signed-by",
    ]
    static let retentionKeys = [
        "keep-last", "keep-hourly", "keep-daily", "keep-weekly", "keep-monthly", "keep-yearly", "keep-within", "keep-tag", "keep-chains",
    ]

    // MARK: State

    let file: String
    let home: String
    private(set) var problems: [ConfigError.Problem] = []

    init(file: String, home: String) {
        self.file = file
        self.home = home
    }

    /// The problems ordered by position (stable for equal positions).
    var sortedProblems: [ConfigError.Problem] {
        problems.enumerated().sorted { lhs, rhs in
            let left = (lhs.element.line ?? 0, lhs.element.column ?? 0)
            let right = (rhs.element.line ?? 0, rhs.element.column ?? 0)
            return left != right ? left < right : lhs.offset < rhs.offset
        }.map(\.element)
    }

    // MARK: Problems

    private mutating func add(_ kind: ConfigError.Kind, at position: (line: Int, column: Int)?, _ message: String) {
        problems.append(ConfigError.Problem(kind: kind, line: position?.line, column: position?.column, message: message))
    }

    private mutating func unknownKey(_ key: String, in table: TOMLTable, place: String, known: [String]) {
        var message = "unknown key '\(key)' \(place)"
        if let suggestion = Suggestion.nearest(to: key, among: known) {
            message += "; did you mean '\(suggestion)'?"
        } else {
            message += "; known keys: \(known.joined(separator: ", "))"
        }
        add(.unknownKey, at: table.position(of: key), message)
    }

    private mutating func wrongType(_ key: String, in table: TOMLTable, expected: String, found: TOMLValue, hint: String = "") {
        add(.wrongType, at: table.position(of: key), "'\(key)' must be \(expected), not \(Self.article(found))\(hint)")
    }

    private static func article(_ value: TOMLValue) -> String {
        switch value {
        case .integer: return "an integer"
        case .array: return "an array"
        default: return "a \(value.typeName)"
        }
    }

    // MARK: Root

    mutating func profiles(in root: TOMLTable) -> [Profile] {
        var result: [Profile] = []
        for key in root.keys where key != "profiles" {
            unknownKey(key, in: root, place: "at the top level (the file holds [profiles.NAME] tables)", known: ["profiles"])
        }
        guard let value = root["profiles"] else { return result }
        guard let profiles = value.tableValue else {
            add(.wrongType, at: root.position(of: "profiles"),
                "'profiles' must be a table of profiles ([profiles.NAME]), not \(Self.article(value))")
            return result
        }
        for name in profiles.keys {
            guard let member = profiles[name] else { continue }
            guard let table = member.tableValue else {
                add(.wrongType, at: profiles.position(of: name),
                    "profile '\(name)' must be a table ([profiles.\(name)] with its keys below it), not \(Self.article(member))")
                continue
            }
            if name.isEmpty || !name.unicodeScalars.allSatisfy(Self.isNameScalar) {
                add(.invalidValue, at: profiles.position(of: name),
                    "the profile name '\(name)' may hold only letters, digits, '-', '_' and '.' (it names cron entries and systemd units)")
            }
            if let profile = self.profile(name, table, position: profiles.position(of: name)) {
                result.append(profile)
            }
        }
        return result
    }

    private static func isNameScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", "-", "_", ".": return true
        default: return false
        }
    }

    // MARK: Profile

    private mutating func profile(_ name: String, _ table: TOMLTable, position: (line: Int, column: Int)?) -> Profile? {
        let before = problems.count
        let place = "in profile '\(name)'"
        for key in table.keys where !Self.profileKeys.contains(key) {
            unknownKey(key, in: table, place: place, known: Self.profileKeys)
        }

        var sources: [String] = []
        if table["sources"] == nil {
            add(.missingKey, at: position, "profile '\(name)' has no 'sources'; add sources = [\"/path/to/back/up\"]")
        } else if let list = strings("sources", in: table) {
            if list.isEmpty {
                add(.invalidValue, at: table.position(of: "sources"), "'sources' must list at least one path")
            } else if list.contains(where: \.isEmpty) {
                add(.invalidValue, at: table.position(of: "sources"), "'sources' holds an empty path")
            }
            sources = list.filter { !$0.isEmpty }.map(resolve)
        }

        let destination = address("destination", in: table)
        var copyTo: [String] = []
        for text in strings("copy-to", in: table) ?? [] {
            guard let parsed = parseAddress(text, key: "copy-to", in: table) else { continue }
            if parsed == destination {
                add(.invalidValue, at: table.position(of: "copy-to"), "'copy-to' names the destination itself (\(parsed))")
            } else {
                copyTo.append(parsed)
            }
        }
        var lockWait: TimeInterval = 0
        if let value = table["lock-wait"] {
            let text: String? = value.intValue.map(String.init) ?? value.stringValue
            if let text, let seconds = LockWait.parse(text) {
                lockWait = seconds
            } else {
                add(.invalidValue, at: table.position(of: "lock-wait"), "'lock-wait' must be \(LockWait.expected)")
            }
        }
        let host = string("host", in: table)
        if let host, let problem = HostIdentity.problem(with: host) {
            add(.invalidValue, at: table.position(of: "host"), "'host': \(problem)")
        }
        var s3 = S3Configuration.Overrides()
        s3.endpoint = string("s3-endpoint", in: table)
        if let endpoint = s3.endpoint, let problem = S3Configuration.endpointProblem(endpoint) {
            add(.invalidValue, at: table.position(of: "s3-endpoint"), "'s3-endpoint' is not usable: \(problem)")
        }
        s3.region = string("s3-region", in: table)
        s3.awsProfile = string("aws-profile", in: table)
        s3.accessKeyID = string("aws-access-key-id", in: table)
        s3.secretAccessKey = string("aws-secret-access-key", in: table)
        s3.sessionToken = string("aws-session-token", in: table)
        if (s3.accessKeyID == nil) != (s3.secretAccessKey == nil) {
            add(.missingKey, at: table.position(of: s3.accessKeyID == nil ? "aws-secret-access-key" : "aws-access-key-id"),
                "give both 'aws-access-key-id' and 'aws-secret-access-key', or neither")
        }

        var encryption = Profile.EncryptionSettings()
        var signing = Profile.SigningSettings()
        for text in strings("recipients", in: table) ?? [] {
            do {
                encryption.recipients.append(try AgeRecipient(parsing: text))
            } catch {
                add(.invalidValue, at: table.position(of: "recipients"), AgeRecipient.misuseMessage(text, where: "'recipients'"))
            }
        }
        encryption.recipientsFiles = stringOrStrings("recipients-file", in: table).map(resolve)
        encryption.passphraseFile = string("passphrase-file", in: table).map(resolve)
        encryption.identityFiles = stringOrStrings("identity-file", in: table).map(resolve)
        signing.keyFile = string("signing-key", in: table).map(resolve)
        if let text = string("signed-by", in: table) {
            if text.hasPrefix(SigningPublicKey.prefix) {
                do {
                    _ = try SigningPublicKey(parsing: text)
                    signing.signedBy = text
                } catch {
                    add(.invalidValue, at: table.position(of: "signed-by"), "\(error)")
                }
            } else {
                signing.signedBy = resolve(text)
            }
        }
        if encryption.passphraseFile != nil && !(encryption.recipients.isEmpty && encryption.recipientsFiles.isEmpty) {
            add(.invalidValue, at: table.position(of: "passphrase-file"),
                "give 'recipients'/'recipients-file' or 'passphrase-file', not both (an age file has public keys or a passphrase)")
        }

        let exclude = strings("exclude", in: table) ?? []
        if !exclude.isEmpty {
            do {
                _ = try ExcludeRules(patterns: exclude)
            } catch {
                add(.invalidValue, at: table.position(of: "exclude"),
                    "'exclude' holds an invalid pattern '\(error.pattern)': \(error.reason)")
            }
        }
        let excludeFrom = strings("exclude-from", in: table) ?? []
        if excludeFrom.contains(where: \.isEmpty) {
            add(.invalidValue, at: table.position(of: "exclude-from"), "'exclude-from' holds an empty path")
        }
        let excludeIfPresent = strings("exclude-if-present", in: table) ?? []
        if let bad = excludeIfPresent.first(where: { BackupSettingRules.markerProblem($0) != nil }) {
            add(.invalidValue, at: table.position(of: "exclude-if-present"),
                "'exclude-if-present' takes file names, not paths or empty names: '\(bad)'")
        }

        var compression = Compression.zstd
        if let text = string("compression", in: table) {
            if let codec = Compression(rawValue: text) {
                compression = codec
            } else {
                let names = Compression.allCases.map(\.rawValue)
                var message = "unknown compression '\(text)'; use zstd, gzip, xz, lz4 or none"
                if let suggestion = Suggestion.nearest(to: text, among: names) { message += " (did you mean '\(suggestion)'?)" }
                add(.invalidValue, at: table.position(of: "compression"), message)
            }
        }
        var level: Int?
        if let value = integer("level", in: table) {
            if let range = compression.levelRange {
                if range.contains(Int(clamping: value)) {
                    level = Int(value)
                } else {
                    add(.invalidValue, at: table.position(of: "level"),
                        "'level' \(value) is out of range for \(compression.rawValue); use \(range.lowerBound) to \(range.upperBound)")
                }
            } else {
                add(.invalidValue, at: table.position(of: "level"), "'level' does not apply to compression 'none'; remove it")
            }
        }
        let threads = ranged("threads", BackupSettingRules.threads, in: table)
        let readers = ranged("readers", BackupSettingRules.readers, in: table)

        let givenTags = strings("tags", in: table) ?? []
        for tag in givenTags {
            if let problem = BackupSettingRules.tagProblem(tag) {
                add(.invalidValue, at: table.position(of: "tags"), "'tags' holds an invalid tag '\(tag)': \(problem)")
            }
        }
        let tags = BackupSettingRules.distinct(givenTags.filter { BackupSettingRules.tagProblem($0) == nil })

        var chain = ChainPolicy()
        if let value = ranged("full-every", BackupSettingRules.fullEvery, in: table) { chain.fullEvery = value }
        if let duration = duration("full-if-older-than", in: table) { chain.fullIfOlderThan = duration }
        chain.ignoreCtime = bool("ignore-ctime", in: table) ?? false
        chain.ignoreInode = bool("ignore-inode", in: table) ?? false
        chain.reread = bool("reread", in: table) ?? false
        chain.storesBlocks = bool("blocks", in: table) ?? true

        let excludeCaches = bool("exclude-caches", in: table) ?? false
        let oneFileSystem = bool("one-file-system", in: table) ?? false
        let beforeCommand = command("before", in: table)
        let afterCommand = command("after", in: table)
        let retention = retention(of: name, in: table)
        let keepsChains = table["retention"]?.tableValue.flatMap { bool("keep-chains", in: $0) } ?? false

        guard problems.count == before else { return nil }
        var profile = Profile(name: name, file: file, sources: sources, destination: destination, exclude: exclude,
                              excludeFrom: excludeFrom.map(resolve), excludeCaches: excludeCaches,
                              excludeIfPresent: excludeIfPresent, oneFileSystem: oneFileSystem, compression: compression,
                              level: level, threads: threads, tags: tags, chain: chain, retention: retention,
                              before: beforeCommand, after: afterCommand)
        profile.encryption = encryption
        profile.keepsChains = keepsChains
        profile.signing = signing
        profile.readers = readers
        if let position = table.position(of: "exclude-from") {
            profile.excludeFromLine = position.line
            profile.excludeFromColumn = position.column
        }
        profile.copyTo = copyTo
        profile.s3 = s3
        profile.lockWait = lockWait
        profile.host = host
        return profile
    }

    /// A destination key (`destination`): a folder (relative to the file's folder), an
    /// s3:// or rclone: address; as text in the form `DestinationAddress` reads back.
    private mutating func address(_ key: String, in table: TOMLTable) -> String? {
        guard let text = string(key, in: table) else { return nil }
        return parseAddress(text, key: key, in: table)
    }

    private mutating func parseAddress(_ text: String, key: String, in table: TOMLTable) -> String? {
        guard !text.isEmpty else {
            add(.invalidValue, at: table.position(of: key), "'\(key)' is empty; give a folder, s3://BUCKET/PREFIX or rclone:REMOTE:PATH, or remove the key")
            return nil
        }
        do {
            // Relative folders are taken from the configuration file's folder, as other paths are.
            let folder = (resolve("x") as NSString).deletingLastPathComponent
            return try DestinationAddress.parse(text, workingDirectory: folder, home: home).description
        } catch {
            add(.invalidValue, at: table.position(of: key), "'\(key)' is not a destination: \(error.problem)"
                + (error.suggestion.map { "; did you mean '\($0)'?" } ?? "") + " (a folder, s3://BUCKET/PREFIX or rclone:REMOTE:PATH)")
            return nil
        }
    }

    private mutating func command(_ key: String, in table: TOMLTable) -> String? {
        guard let text = string(key, in: table) else { return nil }
        if text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            add(.invalidValue, at: table.position(of: key), "'\(key)' is empty; give a shell command or remove the key")
            return nil
        }
        return text
    }

    // MARK: Retention

    private mutating func retention(of name: String, in profile: TOMLTable) -> RetentionPolicy? {
        guard let value = profile["retention"] else { return nil }
        guard let table = value.tableValue else {
            add(.wrongType, at: profile.position(of: "retention"),
                "'retention' must be a table ([profiles.\(name).retention] with keep-* keys), not \(Self.article(value))")
            return nil
        }
        let problemsBefore = problems.count
        for key in table.keys where !Self.retentionKeys.contains(key) {
            unknownKey(key, in: table, place: "in the retention of profile '\(name)'", known: Self.retentionKeys)
        }
        var policy = RetentionPolicy(
            keepLast: count("keep-last", in: table), keepHourly: count("keep-hourly", in: table),
            keepDaily: count("keep-daily", in: table), keepWeekly: count("keep-weekly", in: table),
            keepMonthly: count("keep-monthly", in: table), keepYearly: count("keep-yearly", in: table),
            keepWithin: duration("keep-within", in: table))
        for list in strings("keep-tag", in: table) ?? [] {
            if let tags = RetentionPolicy.tagList(list) {
                policy.keepTags.append(tags)
            } else {
                add(.invalidValue, at: table.position(of: "keep-tag"),
                    "'keep-tag' holds '\(list)' with an empty tag; write \"a,b\" for backups with both tags a and b")
            }
        }
        if policy.isEmpty && problems.count == problemsBefore {
            add(.invalidValue, at: profile.position(of: "retention"),
                "the retention of profile '\(name)' has no rule; give keep-last, keep-hourly, keep-daily, keep-weekly, "
                + "keep-monthly, keep-yearly, keep-within or keep-tag (or remove it to keep every backup)")
        }
        return policy
    }

    /// A whole number that `range` (one of `BackupSettingRules`' ranges) must hold.
    private mutating func ranged(_ key: String, _ range: ClosedRange<Int>, in table: TOMLTable) -> Int? {
        guard let value = integer(key, in: table) else { return nil }
        guard let accepted = BackupSettingRules.accepted(value, in: range) else {
            add(.invalidValue, at: table.position(of: key), "'\(key)' must be from \(range.lowerBound) to \(range.upperBound), not \(value)")
            return nil
        }
        return accepted
    }

    /// A `keep-*` count: a whole number of 0 or more, or -1 or `"unlimited"` for every period
    /// (`RetentionPolicy.count`, as on the command line).
    private mutating func count(_ key: String, in table: TOMLTable) -> Int? {
        guard let value = table[key] else { return nil }
        let expected = "a whole number of 0 or more, or -1 or \"unlimited\""
        switch value {
        case .integer(let number):
            if let count = RetentionPolicy.count(number) { return count }
            add(.invalidValue, at: table.position(of: key), "'\(key)' must be \(expected), not \(number)")
        case .string(let text) where RetentionPolicy.count(word: text) != nil:
            return RetentionPolicy.count(word: text)
        case .string(let text):
            add(.invalidValue, at: table.position(of: key), "'\(key)' must be \(expected), not \"\(text)\"")
        default:
            wrongType(key, in: table, expected: expected, found: value)
        }
        return nil
    }

    // MARK: Typed values

    private mutating func string(_ key: String, in table: TOMLTable) -> String? {
        guard let value = table[key] else { return nil }
        guard let text = value.stringValue else {
            wrongType(key, in: table, expected: "a string", found: value)
            return nil
        }
        return text
    }

    /// A key that takes one string or an array of them.
    private mutating func stringOrStrings(_ key: String, in table: TOMLTable) -> [String] {
        if let text = table[key]?.stringValue { return [text] }
        return strings(key, in: table) ?? []
    }

    private mutating func strings(_ key: String, in table: TOMLTable) -> [String]? {
        guard let value = table[key] else { return nil }
        guard let elements = value.arrayValue else {
            // A lone string is the likeliest slip: show the fix.
            let hint = value.stringValue.map { " (write \(key) = [\"\($0)\"])" } ?? ""
            wrongType(key, in: table, expected: "an array of strings", found: value, hint: hint)
            return nil
        }
        var result: [String] = []
        for (index, element) in elements.enumerated() {
            guard let text = element.stringValue else {
                add(.wrongType, at: table.position(of: key),
                    "'\(key)' must be an array of strings; element \(index + 1) is \(Self.article(element))")
                return nil
            }
            result.append(text)
        }
        return result
    }

    private mutating func integer(_ key: String, in table: TOMLTable) -> Int64? {
        guard let value = table[key] else { return nil }
        guard let number = value.intValue else {
            wrongType(key, in: table, expected: "a whole number", found: value)
            return nil
        }
        return number
    }

    private mutating func bool(_ key: String, in table: TOMLTable) -> Bool? {
        guard let value = table[key] else { return nil }
        guard let flag = value.boolValue else {
            wrongType(key, in: table, expected: "true or false", found: value)
            return nil
        }
        return flag
    }

    private mutating func duration(_ key: String, in table: TOMLTable) -> DurationSpec? {
        guard let text = string(key, in: table) else { return nil }
        do {
            return try DurationSpec(parsing: text)
        } catch {
            add(.invalidValue, at: table.position(of: key), "'\(key)': \(error.description)")
            return nil
        }
    }

    // MARK: Paths

    /// `~` and `~/…` from the home folder; other relative paths from the file's folder.
    private func resolve(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        if path == "~" { return home }
        if path.hasPrefix("~/") { return home + path.dropFirst() }
        let folder = (file as NSString).deletingLastPathComponent
        let base = folder.hasPrefix("/") ? folder : FileManager.default.currentDirectoryPath + (folder.isEmpty ? "" : "/" + folder)
        return base + "/" + path
    }
}
