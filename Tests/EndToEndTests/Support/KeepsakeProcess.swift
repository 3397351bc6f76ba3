import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs the built `keepsake` executable the way a user would, with a private HOME and
/// XDG_DATA_HOME so that nothing ever touches the real home folder.
struct KeepsakeProcess {
    // MARK: Locating the binary

    /// The environment variable that overrides where the binary is found.
    static let binaryOverrideVariable = "KEEPSAKE_BINARY"

    /// The `keepsake` executable: `KEEPSAKE_BINARY` when set, otherwise the one that SwiftPM
    /// built beside the test bundle (same directory as the test runner or the bundle).
    static func locateBinary() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        if let override = environment[binaryOverrideVariable], !override.isEmpty {
            guard access(override, X_OK) == 0 else {
                throw ProcessRunner.Failure(description: "\(binaryOverrideVariable)=\(override) is not an executable file")
            }
            return override
        }
        var folders: [URL] = []
        if let runner = ProcessInfo.processInfo.arguments.first {
            folders.append(URL(fileURLWithPath: runner).deletingLastPathComponent())
        }
        let bundle = Bundle.main.bundleURL
        folders.append(bundle)
        folders.append(bundle.deletingLastPathComponent())
        for bundle in Bundle.allBundles where bundle.bundleURL.pathExtension == "xctest" {
            folders.append(bundle.bundleURL.deletingLastPathComponent())
        }
        for folder in folders {
            let candidate = folder.appendingPathComponent("keepsake").path
            var info = stat()
            if stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG, access(candidate, X_OK) == 0 {
                return candidate
            }
        }
        throw ProcessRunner.Failure(description: "cannot find the keepsake executable near the test bundle "
            + "(looked in \(folders.map(\.path))); build with 'swift build --build-tests' or set \(binaryOverrideVariable)")
    }

    // MARK: State

    /// The executable that runs.
    let executable: String
    /// The private home folder (also the parent of XDG_DATA_HOME).
    let home: String

    /// A runner for `executable` with its home in `home` (created by the caller).
    init(executable: String, home: String) {
        self.executable = executable
        self.home = home
    }

    // MARK: Environment

    /// The environment every run gets: the test process's, minus anything Keepsake reads,
    /// plus a private HOME, XDG_DATA_HOME and NO_COLOR=1.
    var baseEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for key in environment.keys where key.hasPrefix("KEEPSAKE_") || key == "COLUMNS" || key == "FORCE_COLOR" {
            environment.removeValue(forKey: key)
        }
        environment["HOME"] = home
        environment["XDG_DATA_HOME"] = home + "/xdg-data"
        environment["NO_COLOR"] = "1"
        environment["LC_ALL"] = "C.UTF-8"
        return environment
    }

    /// `baseEnvironment` with `changes` applied (a nil value removes the variable).
    func environment(_ changes: [String: String?]) -> [String: String] {
        var environment = baseEnvironment
        for (key, value) in changes {
            environment[key] = value
        }
        return environment
    }

    // MARK: Running

    /// Runs `keepsake ARGUMENTS` to completion.
    /// - Parameters:
    ///   - stdin: bytes for standard input (`/dev/null` when nil).
    ///   - environment: variables to add or (with nil) remove.
    ///   - asNobody: run as uid/gid 65534 through `setpriv` (the test must run as root).
    ///   - executable: another copy of the binary (one an unprivileged user can reach).
    ///   - hostName: run as if on another machine of this name: in UTS and pid namespaces
    ///     of its own with its own `/proc` (`unshare --uts --pid --fork --mount-proc`, the
    ///     test must run as root), its host name set first. Its own pid table matters: a
    ///     lock judges a holder's pid only where it names the same process.
    @discardableResult
    func run(_ arguments: [String], stdin: Data? = nil, environment changes: [String: String?] = [:],
             asNobody: Bool = false, executable override: String? = nil, currentDirectory: String? = nil,
             timeout: TimeInterval = 120, hostName: String? = nil) throws -> ProcessRunner.Outcome {
        let binary = override ?? executable
        if let hostName {
            return try ProcessRunner.run("unshare", ["--uts", "--pid", "--fork", "--mount-proc", "sh", "-c", "hostname \"$0\" && exec \"$@\"", hostName, binary] + arguments,
                                         stdin: stdin, environment: environment(changes),
                                         currentDirectory: currentDirectory, timeout: timeout)
        }
        if asNobody {
            return try ProcessRunner.run("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", binary] + arguments,
                                         stdin: stdin, environment: environment(changes),
                                         currentDirectory: currentDirectory, timeout: timeout)
        }
        return try ProcessRunner.run(binary, arguments, stdin: stdin, environment: environment(changes),
                                     currentDirectory: currentDirectory, timeout: timeout)
    }

    /// Runs `keepsake ARGUMENTS` with arguments given as bytes (paths that are not UTF-8).
    @discardableResult
    func run(bytes arguments: [[UInt8]], stdin: Data? = nil, environment changes: [String: String?] = [:]) throws -> ProcessRunner.Outcome {
        try ProcessRunner.run(executable, byteArguments: arguments, stdin: stdin, environment: environment(changes))
    }

    /// Starts `keepsake ARGUMENTS` in the background with a pipe on its standard input.
    func start(_ arguments: [String], environment changes: [String: String?] = [:]) throws -> ProcessRunner.Running {
        try ProcessRunner.start(executable, arguments, environment: environment(changes))
    }
}
