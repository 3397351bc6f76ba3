import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A single-node SeaweedFS (`weed mini`: master, volume server, filer, S3 gateway and admin
/// server in one process) on 127.0.0.1, for tests of S3-compatible object storage.
///
/// Every port it opens is a free one picked by `FreePort`, bound to 127.0.0.1 only; WebDAV, the
/// admin UI, telemetry and the Iceberg and Lance endpoints are off. Its data, configuration and
/// log live in a temporary directory removed by `stop()` (idempotent, also run from `deinit`).
/// With `.open` access any key pair is accepted (SeaweedFS checks signatures only once an
/// identity is configured); with `.enforced` the S3 gateway gets an identities file
/// (`-s3.config`) naming one key pair, and refuses anything else with 403.
public final class SeaweedServer: Sendable {
    // MARK: Types

    /// Whether the S3 gateway checks credentials.
    public enum Access: Sendable, Equatable {
        /// No identity configured: SeaweedFS accepts any access key and secret, and anonymous requests.
        case open
        /// One identity with these keys, allowed everything (Admin, Read, Write, List, Tagging);
        /// a wrong secret, an unknown key or an unsigned request is refused with 403.
        case enforced(accessKey: String, secretKey: String)

        /// `.enforced` with a random access key and secret.
        public static func enforcedWithRandomKeys() -> Access {
            .enforced(accessKey: "KS" + randomText(18, from: "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
                      secretKey: randomText(40, from: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"))
        }
    }

    /// The TCP ports `weed mini` listens on, all on 127.0.0.1. Each gRPC port is its HTTP port
    /// + 10000 (and is also passed explicitly): weed mini's admin worker dials the admin server
    /// there whatever `-admin.port.grpc` says.
    public struct Ports: Sendable {
        /// Master HTTP and gRPC.
        public let master, masterGRPC: UInt16
        /// Volume server HTTP and gRPC.
        public let volume, volumeGRPC: UInt16
        /// Filer HTTP and gRPC.
        public let filer, filerGRPC: UInt16
        /// S3 gateway HTTP and gRPC.
        public let s3, s3GRPC: UInt16
        /// Admin server HTTP and gRPC (its UI is off, the server is not).
        public let admin, adminGRPC: UInt16

        /// Every port above.
        public var all: [UInt16] {
            [master, masterGRPC, volume, volumeGRPC, filer, filerGRPC, s3, s3GRPC, admin, adminGRPC]
        }
    }

    // MARK: Properties

    /// The S3 endpoint, `http://127.0.0.1:<port>` (path-style requests).
    public let endpoint: URL
    /// The region to sign requests for (SeaweedFS takes the one in the request's scope).
    public let region = "us-east-1"
    /// The access key to sign with (any value works with `.open` access).
    public let accessKey: String
    /// The secret key to sign with (any value works with `.open` access).
    public let secretKey: String
    /// Whether a wrong key or secret is refused.
    public let enforcesCredentials: Bool
    /// The buckets created at start.
    public let buckets: [String]
    /// Every port the server listens on.
    public let ports: Ports
    /// The `weed mini` process.
    public let process: ServerProcess

    /// The temporary directory with the data, configuration and log.
    private let directory: URL

    // MARK: Starting

    /// Starts `weed mini`, creates `buckets` and returns once the S3 gateway answers and a write
    /// through the filer has succeeded; throws (with the tail of the log) if that takes longer
    /// than `timeout`, or if `weed` is not installed (run Scripts/test-servers).
    public init(buckets: [String] = ["keepsake-test"], access: Access = .open, timeout: Duration = .seconds(60)) throws {
        let weed = try Self.weedExecutable()
        try buckets.forEach(Self.validate(bucket:))
        let pairs = try FreePort.pickPairs(5, offset: Self.grpcOffset)
        ports = Ports(master: pairs[0].0, masterGRPC: pairs[0].1, volume: pairs[1].0, volumeGRPC: pairs[1].1,
                      filer: pairs[2].0, filerGRPC: pairs[2].1, s3: pairs[3].0, s3GRPC: pairs[3].1,
                      admin: pairs[4].0, adminGRPC: pairs[4].1)
        self.buckets = buckets
        endpoint = URL(string: "http://127.0.0.1:\(ports.s3)") ?? URL(fileURLWithPath: "/")
        directory = try ScratchDirectory.make("weed")
        switch access {
        case .open:
            accessKey = "keepsake-open"
            secretKey = "keepsake-open-secret"
            enforcesCredentials = false
        case let .enforced(key, secret):
            accessKey = key
            secretKey = secret
            enforcesCredentials = true
        }
        do {
            let data = try ScratchDirectory.subdirectory("data", of: directory)
            var arguments = [
                "mini", "-dir=\(data.path)",
                "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                "-master.telemetry=false", "-admin.ui=false", "-webdav=false",
                "-master.port=\(ports.master)", "-master.port.grpc=\(ports.masterGRPC)",
                "-volume.port=\(ports.volume)", "-volume.port.grpc=\(ports.volumeGRPC)",
                "-filer.port=\(ports.filer)", "-filer.port.grpc=\(ports.filerGRPC)",
                "-s3.port=\(ports.s3)", "-s3.port.grpc=\(ports.s3GRPC)",
                "-admin.port=\(ports.admin)", "-admin.port.grpc=\(ports.adminGRPC)",
                "-s3.port.iceberg=0", "-s3.port.lance=0",
                // Unix sockets default to /tmp/seaweedfs-<service>-<port>.sock.
                "-filer.localSocket=\(directory.path)/filer.sock", "-s3.localSocket=\(directory.path)/s3.sock",
            ]
            if case .enforced = access {
                arguments.append("-s3.config=\(try Self.writeIdentities(access, in: directory).path)")
            }
            process = try ServerProcess(
                name: "weed mini",
                executable: weed,
                arguments: arguments,
                environment: Self.environment(home: directory),
                logFile: directory.appendingPathComponent("weed-mini.log"),
                workingDirectory: directory
            )
        } catch {
            ScratchDirectory.remove(directory)
            throw error
        }
        do {
            try ports.all.forEach { try process.waitForPort($0, timeout: timeout) }
            try Self.prepare(buckets: buckets, filer: process, filerPort: ports.filer, s3: process, s3Port: ports.s3, timeout: timeout)
        } catch {
            stop()
            throw error
        }
    }

    /// Creates another bucket (through the filer, as a folder under /buckets, which is what an
    /// S3 bucket is to SeaweedFS).
    public func createBucket(_ name: String) throws {
        try Self.validate(bucket: name)
        try Self.createBucket(name, filerPort: ports.filer)
    }

    // MARK: Stopping

    /// Stops the server (SIGTERM, SIGKILL after 15 s; it takes about 3 s), waits for its pid and
    /// removes its temporary directory. Idempotent.
    public func stop() {
        process.stop()
        Self.removeGRPCSockets(ports: ports.all)
        ScratchDirectory.remove(directory)
    }

    deinit {
        stop()
    }

    // MARK: Locating weed

    /// The `weed` binary: `$KEEPSAKE_WEED`, else `<package root>/.build/seaweedfs/bin/weed`
    /// (where Scripts/test-servers installs it); throws saying to run Scripts/test-servers when
    /// it is missing.
    public static func weedExecutable() throws -> String {
        if let path = ProcessInfo.processInfo.environment["KEEPSAKE_WEED"], !path.isEmpty {
            guard access(path, X_OK) == 0 else {
                throw ServerProcess.Failure("KEEPSAKE_WEED=\(path) is not an executable file")
            }
            return path
        }
        let path = packageRoot().appendingPathComponent(".build/seaweedfs/bin/weed").path
        guard access(path, X_OK) == 0 else {
            throw ServerProcess.Failure("SeaweedFS is not installed (no executable \(path)): run Scripts/test-servers, "
                + "or set KEEPSAKE_WEED to a weed 4.48 binary")
        }
        return path
    }

    /// How far above its HTTP port weed expects a server's gRPC port.
    static let grpcOffset: UInt16 = 10_000

    /// The package's root: the parent of the Tests folder this source file is in.
    static func packageRoot() -> URL {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/" && folder.lastPathComponent != "Tests" { folder.deleteLastPathComponent() }
        return folder.deletingLastPathComponent()
    }

    // MARK: Shared with SeaweedCluster

    /// The environment for weed: no AWS_*, S3_* or WEED_* variables (weed mini makes an
    /// identity from AWS_ACCESS_KEY_ID, and WEED_* override its configuration files), no
    /// proxies, HOME in the temporary directory (weed reads ~/.seaweedfs/*.toml) and TMPDIR too
    /// (weed writes log files weed.<host>.<user>.log.* there besides its standard error).
    static func environment(home: URL) -> [String: String] {
        ServerProcess.inheritedEnvironment(
            removing: ["AWS_*", "S3_*", "WEED_*", "http_proxy", "https_proxy", "all_proxy", "no_proxy",
                       "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "GRPC_PROXY", "grpc_proxy"],
            setting: ["HOME": home.path, "TMPDIR": home.path]
        )
    }

    /// Removes the Unix sockets weed makes beside its gRPC ports, always in /tmp
    /// (`/tmp/seaweedfs-<service>-grpc-<port>.sock`): weed removes them when it exits cleanly,
    /// not when it is killed. Call only once the processes that had `ports` are reaped.
    static func removeGRPCSockets(ports: [UInt16]) {
        for service in ["master", "volume", "filer", "s3", "admin"] {
            for port in ports {
                let path = "/tmp/seaweedfs-\(service)-grpc-\(port).sock"
                var info = stat()
                if lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK { unlink(path) }
            }
        }
    }

    /// Writes the S3 identities file for `.enforced` access.
    static func writeIdentities(_ access: Access, in directory: URL) throws -> URL {
        struct Credential: Encodable { let accessKey, secretKey: String }
        struct Identity: Encodable { let name: String; let credentials: [Credential]; let actions: [String] }
        struct Identities: Encodable { let identities: [Identity] }
        guard case let .enforced(key, secret) = access else {
            throw ServerProcess.Failure("an identities file is only written for enforced access")
        }
        let file = directory.appendingPathComponent("s3-identities.json")
        let identities = Identities(identities: [
            Identity(name: "keepsake", credentials: [Credential(accessKey: key, secretKey: secret)],
                     actions: ["Admin", "Read", "Write", "List", "Tagging"]),
        ])
        try JSONEncoder().encode(identities).write(to: file)
        chmod(file.path, 0o600)
        return file
    }

    /// Creates `buckets`, waits until a write through the filer into the first bucket's
    /// collection succeeds (so volumes can be grown: "no volume server capacity" otherwise),
    /// removes that probe, and waits until the S3 gateway answers HTTP.
    static func prepare(buckets: [String], filer: ServerProcess, filerPort: UInt16,
                        s3: ServerProcess, s3Port: UInt16, timeout: Duration) throws {
        for bucket in buckets {
            try filer.waitUntil("created bucket \(bucket)", timeout: timeout) {
                (try? createBucket(bucket, filerPort: filerPort)) != nil
            }
        }
        let collection = buckets.first.map { "?collection=\($0)" } ?? ""
        var lastAnswer = "none"
        do {
            try filer.waitUntil("accepted a write", timeout: timeout) {
                guard let answer = try? LoopbackHTTP.request(
                    "PUT", port: filerPort, path: "/.keepsake-probe/ready\(collection)",
                    headers: ["Content-Type": "application/octet-stream"], body: Array("ready".utf8)
                ) else { return false }
                lastAnswer = "HTTP \(answer.status) \(answer.text.prefix(300))"
                return answer.status == 201 || answer.status == 200
            }
        } catch {
            throw ServerProcess.Failure("\(error)\n(the filer's last answer to the probe write: \(lastAnswer))")
        }
        _ = try? LoopbackHTTP.request("DELETE", port: filerPort, path: "/.keepsake-probe/?recursive=true")
        try s3.waitUntil("answered HTTP on its S3 port \(s3Port)", timeout: timeout) {
            (try? LoopbackHTTP.request("GET", port: s3Port, path: "/")) != nil
        }
    }

    /// Creates `/buckets/<name>/` in the filer and checks it is there.
    static func createBucket(_ name: String, filerPort: UInt16) throws {
        let made = try LoopbackHTTP.request("POST", port: filerPort, path: "/buckets/\(name)/")
        guard made.status == 201 || made.status == 200 else {
            throw ServerProcess.Failure("creating bucket \(name) through the filer: HTTP \(made.status) \(made.text.prefix(300))")
        }
        let listed = try LoopbackHTTP.request("GET", port: filerPort, path: "/buckets/\(name)/", headers: ["Accept": "application/json"])
        guard listed.status == 200 else {
            throw ServerProcess.Failure("bucket \(name) is not in the filer after its creation: HTTP \(listed.status)")
        }
    }

    /// S3's rules for bucket names (3 to 63 of a-z, 0-9, '.', '-', starting and ending with a
    /// letter or digit); SeaweedFS refuses the others.
    static func validate(bucket: String) throws {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789.-")
        let edges = Set("abcdefghijklmnopqrstuvwxyz0123456789")
        guard (3...63).contains(bucket.count), bucket.allSatisfy(allowed.contains),
              let first = bucket.first, let last = bucket.last, edges.contains(first), edges.contains(last)
        else {
            throw ServerProcess.Failure("'\(bucket)' is not a valid S3 bucket name (3 to 63 of a-z, 0-9, '.', '-')")
        }
    }

    /// `count` random characters from `alphabet`.
    static func randomText(_ count: Int, from alphabet: String) -> String {
        let characters = Array(alphabet)
        return String((0..<count).map { _ in characters[Int.random(in: 0..<characters.count)] })
    }
}
