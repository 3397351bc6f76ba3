import BackupCore
import Foundation
import KeepsakeStorage
import KeepsakeSupport

/// Where backups go: `--dest`, else `KEEPSAKE_DEST`, else
/// `${XDG_DATA_HOME:-~/.local/share}/keepsake/backups`.
enum DestinationResolver {
    /// The destination for an optional `--dest` value (or a profile's `destination`).
    /// - Throws: `DestinationAddressError` for a value that is not a form Keepsake knows;
    ///   `MissingHomeError` when the default is needed and there is no home folder.
    static func address(_ option: String?, environment: [String: String]) throws -> DestinationAddress {
        let text: String
        if let option, !option.isEmpty {
            text = option
        } else if let fromEnvironment = environment["KEEPSAKE_DEST"], !fromEnvironment.isEmpty {
            text = fromEnvironment
        } else {
            return .localFolder(path: try defaultDestination(environment: environment))
        }
        return try DestinationAddress.parse(text, workingDirectory: FileManager.default.currentDirectoryPath,
                                            home: homeFolder(environment: environment) ?? NSHomeDirectory())
    }

    /// The XDG default: `${XDG_DATA_HOME:-~/.local/share}/keepsake/backups`.
    /// - Throws: `MissingHomeError` when it lies in a home folder that cannot be found.
    static func defaultDestination(environment: [String: String],
                                   accountHome: () -> String? = accountHomeFolder) throws -> String {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return data + "/keepsake/backups"
        }
        guard let home = homeFolder(environment: environment, accountHome: accountHome) else {
            throw MissingHomeError(needed: "the default destination (~/.local/share/keepsake/backups)")
        }
        return home + "/.local/share/keepsake/backups"
    }

    /// HOME, else (a bare cron or systemd environment) the home folder of the user's
    /// account when it exists; nil when there is neither.
    static func homeFolder(environment: [String: String], accountHome: () -> String? = accountHomeFolder) -> String? {
        if let home = environment["HOME"], !home.isEmpty { return home }
        return accountHome()
    }

    /// The home folder the password database gives the effective user, when it is a folder.
    static func accountHomeFolder() -> String? {
        guard let entry = getpwuid(geteuid()), let directory = entry.pointee.pw_dir else { return nil }
        let home = String(cString: directory)
        var isFolder: ObjCBool = false
        guard !home.isEmpty, FileManager.default.fileExists(atPath: home, isDirectory: &isFolder), isFolder.boolValue else {
            return nil
        }
        return home
    }

    /// A path made absolute against the working directory, `~/` expanded.
    static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        if path == "~" || path.hasPrefix("~/") { return NSHomeDirectory() + path.dropFirst() }
        return FileManager.default.currentDirectoryPath + "/" + path
    }

    /// `absolute` for a path given as bytes (it need not be UTF-8).
    static func absolute(_ path: [UInt8]) -> [UInt8] {
        let slash = UInt8(ascii: "/")
        let whole: [UInt8]
        if path.first == slash {
            whole = path
        } else if path == [UInt8(ascii: "~")] || path.starts(with: [UInt8(ascii: "~"), slash]) {
            whole = PathBytes.from(NSHomeDirectory()) + path.dropFirst()
        } else {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let current = getcwd(&buffer, buffer.count).flatMap { PathBytes.fromCString($0) }
                ?? PathBytes.from(FileManager.default.currentDirectoryPath)
            whole = PathBytes.join(current, path)
        }
        // Without `.` components, doubled or trailing slashes: `restore --target .` says
        // where things landed with no stray `/.` (`..` stays: a symlink may lie before it).
        return PathBytes.components(whole).reduce([slash]) { $0 == [slash] ? $0 + $1 : $0 + [slash] + $1 }
    }
}
