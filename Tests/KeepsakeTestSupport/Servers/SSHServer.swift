import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// OpenSSH's sshd on 127.0.0.1, for tests of rclone's `sftp` backend (and anything else that
/// speaks SSH).
///
/// `/usr/sbin/sshd -D -e -f <config>` runs as a child on a free port, with a throwaway ed25519
/// host key and a throwaway client key made by ssh-keygen in a temporary directory: key login
/// only, for the user the tests run as (root in CI: `PermitRootLogin prohibit-password`), no
/// PAM, sftp served by sshd itself. `stop()` (idempotent, also run from `deinit`) stops sshd,
/// waits for its pid and removes the temporary directory.
public final class SSHServer: Sendable {
    // MARK: Types

    /// An rclone configuration file with one `sftp` remote for this server.
    public struct RcloneConfig: Sendable {
        /// The configuration file.
        public let file: URL
        /// The remote's name in it.
        public let remoteName: String

        /// `<remoteName>:<path>`, how rclone names `path` on the server.
        public func remote(_ path: String) -> String {
            "\(remoteName):\(path)"
        }

        /// The test process's environment with `RCLONE_CONFIG` set to `file`, and without the
        /// variables that would change what rclone does (other RCLONE_*, and AWS_CA_BUNDLE,
        /// which Debian's rclone 1.60 fails on).
        public var environment: [String: String] {
            ServerProcess.inheritedEnvironment(removing: ["RCLONE_*", "AWS_CA_BUNDLE"],
                                               setting: ["RCLONE_CONFIG": file.path])
        }
    }

    // MARK: Properties

    /// Always 127.0.0.1.
    public let host = "127.0.0.1"
    /// The port sshd listens on.
    public let port: UInt16
    /// The user to log in as: the one the tests run as.
    public let user: String
    /// The client's private key (accepted for `user`).
    public let clientKey: URL
    /// A known_hosts file naming the server's host key for `[127.0.0.1]:<port>`.
    public let knownHosts: URL
    /// An empty folder the tests can use through the server (by its absolute path).
    public let folder: URL
    /// The sshd process.
    public let process: ServerProcess

    /// The temporary directory with keys, configuration, log and `folder`.
    private let directory: URL

    // MARK: Starting

    /// Makes keys and a configuration, starts sshd and returns once it accepts connections;
    /// throws (with the tail of its log) if that takes longer than `timeout`.
    public init(timeout: Duration = .seconds(30)) throws {
        let sshd = "/usr/sbin/sshd"
        guard access(sshd, X_OK) == 0, access("/usr/bin/ssh-keygen", X_OK) == 0 else {
            throw ServerProcess.Failure("OpenSSH's sshd or ssh-keygen is not installed: run Scripts/test-servers")
        }
        port = try FreePort.pick()
        user = try Self.currentUser()
        let directory = try ScratchDirectory.make("sshd")
        self.directory = directory
        clientKey = directory.appendingPathComponent("client_ed25519")
        knownHosts = directory.appendingPathComponent("known_hosts")
        folder = directory.appendingPathComponent("folder", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let hostKey = directory.appendingPathComponent("host_ed25519")
            try Self.makeKey(hostKey, comment: "keepsake-test-host")
            try Self.makeKey(clientKey, comment: "keepsake-test-client")
            let hostPublic = try String(contentsOf: hostKey.appendingPathExtension("pub"), encoding: .utf8)
            let fields = hostPublic.split(separator: " ")
            guard fields.count >= 2 else { throw ServerProcess.Failure("ssh-keygen wrote an unreadable public key: \(hostPublic)") }
            try "[127.0.0.1]:\(port) \(fields[0]) \(fields[1])\n".write(to: knownHosts, atomically: true, encoding: .utf8)
            let authorizedKeys = directory.appendingPathComponent("authorized_keys")
            try FileManager.default.copyItem(at: clientKey.appendingPathExtension("pub"), to: authorizedKeys)
            let config = directory.appendingPathComponent("sshd_config")
            try Self.configuration(port: port, user: user, hostKey: hostKey, authorizedKeys: authorizedKeys,
                                   pidFile: directory.appendingPathComponent("sshd.pid"))
                .write(to: config, atomically: true, encoding: .utf8)
            try Self.makePrivilegeSeparationDirectory()
            process = try ServerProcess(
                name: "sshd",
                executable: sshd,
                arguments: ["-D", "-e", "-f", config.path],
                environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"],
                logFile: directory.appendingPathComponent("sshd.log"),
                workingDirectory: directory
            )
        } catch {
            ScratchDirectory.remove(directory)
            throw error
        }
        do {
            try process.waitForPort(port, timeout: timeout)
        } catch {
            stop()
            throw error
        }
    }

    // MARK: rclone

    /// Writes an rclone configuration file with one `sftp` remote named `remoteName` for this
    /// server (key file, known_hosts checked, shell type and hash commands given so rclone 1.60
    /// neither asks nor probes) and returns it; run rclone with its `environment`, or with
    /// `--config <file>`.
    public func rcloneConfig(remoteName: String = "keepsake-sftp") throws -> RcloneConfig {
        let file = directory.appendingPathComponent("rclone-\(remoteName).conf")
        let text = """
            [\(remoteName)]
            type = sftp
            host = \(host)
            port = \(port)
            user = \(user)
            key_file = \(clientKey.path)
            known_hosts_file = \(knownHosts.path)
            shell_type = unix
            md5sum_command = md5sum
            sha1sum_command = sha1sum
            set_modtime = true

            """
        try text.write(to: file, atomically: true, encoding: .utf8)
        chmod(file.path, 0o600)
        return RcloneConfig(file: file, remoteName: remoteName)
    }

    // MARK: Stopping

    /// Stops sshd (SIGTERM, SIGKILL after 10 s), waits for its pid and removes the temporary
    /// directory. Idempotent.
    public func stop() {
        process.stop(grace: .seconds(10))
        ScratchDirectory.remove(directory)
    }

    deinit {
        stop()
    }

    // MARK: Internals

    /// The sshd configuration (only this file: no Include of /etc/ssh/sshd_config.d).
    private static func configuration(port: UInt16, user: String, hostKey: URL, authorizedKeys: URL, pidFile: URL) -> String {
        """
        Port \(port)
        ListenAddress 127.0.0.1
        AddressFamily inet
        HostKey \(hostKey.path)
        PidFile \(pidFile.path)
        AuthorizedKeysFile \(authorizedKeys.path)
        AllowUsers \(user)
        PubkeyAuthentication yes
        PasswordAuthentication no
        KbdInteractiveAuthentication no
        PermitRootLogin prohibit-password
        UsePAM no
        # The temporary directory is under a world-writable /tmp, which StrictModes refuses.
        StrictModes no
        UseDNS no
        X11Forwarding no
        AllowTcpForwarding no
        AllowAgentForwarding no
        PrintMotd no
        LogLevel INFO
        Subsystem sftp internal-sftp

        """
    }

    /// The user the tests run as.
    private static func currentUser() throws -> String {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else {
            throw ServerProcess.Failure("no passwd entry for uid \(geteuid())")
        }
        return String(cString: name)
    }

    /// `ssh-keygen -t ed25519 -N '' -f <file>`.
    private static func makeKey(_ file: URL, comment: String) throws {
        let keygen = Process()
        keygen.executableURL = URL(fileURLWithPath: "/usr/bin/ssh-keygen")
        keygen.arguments = ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", file.path]
        keygen.standardInput = FileHandle.nullDevice
        keygen.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        keygen.standardError = errors
        try keygen.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        keygen.waitUntilExit()
        guard keygen.terminationStatus == 0 else {
            throw ServerProcess.Failure("ssh-keygen for \(file.path) exited with status \(keygen.terminationStatus): "
                + String(decoding: message, as: UTF8.self))
        }
    }

    /// sshd refuses to start without its privilege separation directory /run/sshd (made by the
    /// init script or systemd, neither of which runs here).
    private static func makePrivilegeSeparationDirectory() throws {
        var info = stat()
        if stat("/run/sshd", &info) == 0 { return }
        guard mkdir("/run/sshd", 0o755) == 0 || errno == EEXIST else {
            throw ServerProcess.Failure("sshd needs /run/sshd, which cannot be made: \(String(cString: strerror(errno)))")
        }
    }
}
