import BackupCore
import Foundation
import KeepsakeSupport
import KeepsakeTOML

/// Keepsake's configuration file: named profiles for `keepsake run` and `keepsake schedule`.
///
/// The file is `${XDG_CONFIG_HOME:-~/.config}/keepsake/config.toml` (an `XDG_CONFIG_HOME`
/// that is not an absolute path is ignored, as the XDG specification says), or the file given
/// with `--config FILE`.
///
/// ## Format
///
/// ```toml
/// [profiles.home]
/// sources = ["/home/ana"]                          # required: one or more paths
/// destination = "/mnt/usb/backups"                 # default: $KEEPSAKE_DEST, else ~/.local/share/keepsake/backups
/// exclude = ["*.tmp", "node_modules/"]             # gitignore-style patterns, as --exclude
/// exclude-from = ["/home/ana/.keepsakeignore"]     # pattern files, as --exclude-from
/// exclude-caches = true                            # as --exclude-caches
/// exclude-if-present = [".nobackup"]               # as --exclude-if-present
/// one-file-system = false                          # as --one-file-system
/// compression = "zstd"                             # zstd, gzip, xz, lz4 or none
/// level = 3                                        # zstd 1-19, gzip 1-9, xz 0-9, lz4 1-9
/// threads = 2                                      # compressor threads, 1-256 (default: the CPUs)
/// tags = ["home"]                                  # labels for every backup
/// full-every = 30                                  # start a new chain after this many backups
/// full-if-older-than = "30d"                       # … or when its full backup is this old
///                                                  # (neither by default where prune writes supplements)
/// ignore-ctime = false                             # as --ignore-ctime
/// ignore-inode = false                             # as --ignore-inode
/// reread = false                                   # as --reread
/// blocks = false                                   # as --blocks
/// before = "pg_dump shop > /var/backups/shop.sql"  # /bin/sh -c before the backup
/// after = "curl -fsS https://hc.example/ping"      # /bin/sh -c after everything else
///
/// [profiles.home.retention]                        # optional: prune after each run
/// keep-last = 3
/// keep-hourly = 24
/// keep-daily = 7
/// keep-weekly = 4
/// keep-monthly = 12
/// keep-yearly = 5
/// keep-within = "2d"
/// keep-tag = ["keep", "db,monthly"]                # "a,b": backups with both tags
/// keep-chains = false                              # true: keep what kept backups take files from
/// ```
///
/// - **TOML**: the subset ``TOMLParser`` accepts (comments, basic and literal strings,
///   multi-line strings, integers, booleans, arrays, tables, dotted keys, inline tables; no
///   dates). `[profiles.home]` with `retention.keep-last = 3` inside it, or
///   `[profiles.home.retention]`, or an inline `retention = { keep-last = 3 }` all work.
/// - **Top level**: only `profiles`, a table of profiles. Profile names hold letters, digits,
///   `-`, `_` and `.` (they name cron entries and systemd units).
/// - **Types**: paths, patterns, names and tags are arrays of strings (`sources`, `exclude`,
///   `exclude-from`, `exclude-if-present`, `tags`, `keep-tag`); `destination`, `compression`,
///   `full-if-older-than`, `keep-within`, `before` and `after` are strings; `level`, `threads`
///   and `full-every` are whole numbers; `exclude-caches`, `one-file-system`, `ignore-ctime`,
///   `ignore-inode`, `reread` and `blocks` are `true` or `false`; the `keep-*` counts are whole numbers
///   of 0 or more (0 leaves the rule unused) or the string `"unlimited"`.
/// - **Durations** (`full-if-older-than`, `keep-within`): numbers with the units `y`, `m`
///   (months), `w`, `d`, `h`, like `7d`, `2w`, `1y6m` (``DurationSpec``).
/// - **Paths**: `~` and `~/…` start at the home folder; other relative paths are relative to
///   the folder holding the configuration file.
/// - **Defaults**: those of `keepsake backup` (zstd at level 3, a full backup every 30 backups
///   or 30 days). Without a `retention` table nothing is pruned; a `retention` table without
///   any rule is an error.
/// - **Errors**: an unknown key (with a "did you mean" suggestion), a wrong type, or an
///   invalid value is reported as `FILE:LINE:COLUMN: message`, every problem in the file at
///   once; a syntax error stops at the first one.
public struct ConfigFile: Sendable, Equatable {
    // MARK: Properties

    /// The file's path, as given.
    public let path: String
    /// The profiles, in the order the file defines them.
    public let profiles: [Profile]

    /// The profile names, in file order.
    public var profileNames: [String] { profiles.map(\.name) }

    // MARK: Locating

    /// The configuration file's place below the configuration folder.
    public static let relativePath = "keepsake/config.toml"

    /// `${XDG_CONFIG_HOME:-~/.config}/keepsake/config.toml` for `environment`.
    public static func defaultPath(environment: [String: String]) -> String {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            return config + "/" + relativePath
        }
        return home(environment: environment) + "/.config/" + relativePath
    }

    /// The home folder: `HOME`, else the account's.
    static func home(environment: [String: String]) -> String {
        if let home = environment["HOME"], !home.isEmpty { return home }
        return NSHomeDirectory()
    }

    // MARK: Loading

    /// Reads and validates the file at `path` (the default path when nil).
    ///
    /// - Throws: ``ConfigError``: the file is missing (the message says how to create one) or
    ///   unreadable, its TOML is invalid, or a profile has problems.
    public static func load(path: String?, environment: [String: String]) throws(ConfigError) -> ConfigFile {
        let file = path ?? defaultPath(environment: environment)
        var info = stat()
        guard stat(file, &info) == 0 else {
            let code = errno
            let reason = String(cString: strerror(code))
            if code == ENOENT {
                let command = path == nil ? "keepsake run home" : "keepsake run home --config \(file)"
                throw ConfigError(file: file, kind: .fileMissing, message:
                    "No configuration file at \(file); create it with a profile like this one "
                    + "(docs/configuration.md describes every key):\n\n"
                    + "[profiles.home]\nsources = [\"\(home(environment: environment))\"]\n\n"
                    + "then run '\(command)'")
            }
            throw ConfigError(file: file, kind: .unreadable, message: "Cannot read the configuration file \(file): \(reason)")
        }
        guard info.st_mode & S_IFMT != S_IFDIR else {
            throw ConfigError(file: file, kind: .unreadable, message: "The configuration file \(file) is a folder; give a file")
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            throw ConfigError(file: file, kind: .unreadable,
                              message: "Cannot read the configuration file \(file): \((error as NSError).localizedDescription)")
        }
        return try ConfigFile(bytes: Array(data), path: file, home: home(environment: environment))
    }

    /// Parses and validates configuration text.
    ///
    /// - Parameters:
    ///   - bytes: The file's contents (UTF-8).
    ///   - path: The file's path: named in errors, and the base of relative paths.
    ///   - home: The folder `~` stands for.
    public init(bytes: [UInt8], path: String, home: String) throws(ConfigError) {
        let table: TOMLTable
        do {
            table = try TOMLParser.parse(bytes: bytes)
        } catch {
            throw ConfigError(file: path, kind: .syntax, line: error.line, column: error.column, message: error.message)
        }
        var validator = ConfigValidator(file: path, home: home)
        let profiles = validator.profiles(in: table)
        guard validator.problems.isEmpty else {
            throw ConfigError(file: path, problems: validator.sortedProblems)
        }
        self.path = path
        self.profiles = profiles
    }

    /// Parses and validates configuration text given as a string (see `init(bytes:path:home:)`).
    public init(text: String, path: String, home: String) throws(ConfigError) {
        try self.init(bytes: Array(text.utf8), path: path, home: home)
    }

    // MARK: Profiles

    /// The profile named `name`.
    ///
    /// - Throws: ``ConfigError`` (`profileNotFound`) naming the file and the profiles it has,
    ///   e.g. `no profile 'hme' in /home/ana/.config/keepsake/config.toml; profiles: home, db;
    ///   did you mean 'home'?`.
    public func profile(named name: String) throws(ConfigError) -> Profile {
        if let found = profiles.first(where: { $0.name == name }) { return found }
        guard !profiles.isEmpty else {
            throw ConfigError(file: path, kind: .profileNotFound,
                              message: "no profile '\(name)' in \(path); it defines no profiles (add a [profiles.\(name)] table)")
        }
        var message = "no profile '\(name)' in \(path); profiles: \(profileNames.joined(separator: ", "))"
        if let suggestion = Suggestion.nearest(to: name, among: profileNames) {
            message += "; did you mean '\(suggestion)'?"
        }
        throw ConfigError(file: path, kind: .profileNotFound, message: message)
    }
}
