import Foundation
import KeepsakeTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The real servers of KeepsakeTestSupport (SeaweedFS single node and cluster, sshd for
/// rclone's sftp backend) start on loopback only, serve real clients (curl with SigV4, rclone)
/// and are gone, with their ports free, once stopped.
// test-tag(plain-only): tests of the test servers themselves: no project code
final class TestServerTests: KeepsakeTestCase {
    private var mini: SeaweedServer?
    private var cluster: SeaweedCluster?
    private var ssh: SSHServer?
    private var scratch: URL?

    // MARK: Set-up

    override func setUpWithError() throws {
        try super.setUpWithError()
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("keepsake-servertests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        scratch = folder
    }

    override func tearDown() {
        mini?.stop()
        cluster?.stop()
        ssh?.stop()
        (mini, cluster, ssh) = (nil, nil, nil)
        if let scratch { try? FileManager.default.removeItem(at: scratch) }
        super.tearDown()
    }

    // MARK: SeaweedFS, single node

    func testMiniServesS3OnLoopbackOnlyAndFreesItsPortsWhenStopped() throws {
        let server = try SeaweedServer(buckets: ["keepsake-alpha", "keepsake-beta"])
        mini = server
        let object = try file("object.bin", bytes: randomBytes(300_000))
        XCTAssertEqual(try curl(server, ["-T", object.path], "keepsake-alpha/folder/object.bin").status, 200)
        let fetched = try curl(server, [], "keepsake-alpha/folder/object.bin")
        XCTAssertEqual(fetched.status, 200)
        XCTAssertEqual(fetched.body, try Data(contentsOf: object))
        // (Without identities SeaweedFS lists no bucket to anyone: each is asked for by name.)
        for bucket in server.buckets {
            let listing = try curl(server, [], "\(bucket)?list-type=2")
            XCTAssertEqual(listing.status, 200, listing.text)
            XCTAssertTrue(listing.text.contains("<Name>\(bucket)</Name>"), listing.text)
        }

        let sockets = try listeningSockets(of: server.process.pid)
        XCTAssertEqual(Set(sockets.tcp.map(\.port)), Set(server.ports.all), "ports listened on versus ports assigned")
        for socket in sockets.tcp + sockets.udp {
            XCTAssertEqual(socket.address, "127.0.0.1", "\(socket) is not on loopback")
        }
        let defaults: Set<UInt16> = [9333, 19333, 9340, 19340, 8888, 18888, 8333, 18333, 23646, 33646, 7333, 8181, 9101, 6060]
        XCTAssertEqual(Set(sockets.tcp.map(\.port)).intersection(defaults), [], "weed mini listens on a default port")

        // Paused, it still holds its ports but answers nothing; resumed, it answers again.
        server.process.pause()
        XCTAssertThrowsError(try LoopbackHTTP.request("GET", port: server.ports.s3, path: "/", timeout: .seconds(1)))
        server.process.resume()
        XCTAssertNoThrow(try LoopbackHTTP.request("GET", port: server.ports.s3, path: "/", timeout: .seconds(10)))

        let pid = server.process.pid
        server.stop()
        XCTAssertFalse(processExists(pid), "weed mini (pid \(pid)) is still there after stop()")
        for port in server.ports.all {
            XCTAssertTrue(FreePort.isFree(port), "port \(port) is still taken after stop()")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: server.process.logFile.deletingLastPathComponent().path),
                       "the temporary directory is left behind")
        server.stop()
    }

    func testEnforcedCredentialsRefuseAWrongSecretWith403() throws {
        let server = try SeaweedServer(buckets: ["keepsake-locked"], access: .enforcedWithRandomKeys())
        mini = server
        XCTAssertTrue(server.enforcesCredentials)
        let object = try file("secret.txt", bytes: Array("only for the right key\n".utf8))
        let key = "keepsake-locked/secret.txt"
        XCTAssertEqual(try curl(server, ["-T", object.path], key, secret: server.secretKey + "x").status, 403)
        XCTAssertEqual(try curl(server, ["-T", object.path], key, accessKey: "KSUNKNOWNKEY000000000").status, 403)
        XCTAssertEqual(try curl(server, ["-T", object.path], key, signed: false).status, 403)
        XCTAssertEqual(try curl(server, ["-T", object.path], key).status, 200)
        let fetched = try curl(server, [], key)
        XCTAssertEqual(fetched.status, 200)
        XCTAssertEqual(fetched.body, try Data(contentsOf: object))
        XCTAssertEqual(try curl(server, [], key, secret: "wrong").status, 403)
        XCTAssertEqual(try curl(server, [], key, signed: false).status, 403)
        let buckets = try curl(server, [], "")
        XCTAssertEqual(buckets.status, 200)
        XCTAssertTrue(buckets.text.contains("<Name>keepsake-locked</Name>"), buckets.text)
        XCTAssertEqual(try curl(server, [], "", secret: "wrong").status, 403)
    }

    // MARK: SeaweedFS, cluster

    func testClusterKeepsServingWhenAVolumeServerStops() throws {
        let cluster = try SeaweedCluster(volumeServers: 3, buckets: ["keepsake-cluster"])
        self.cluster = cluster
        XCTAssertEqual(try cluster.registeredVolumeServers().count, 3)
        for process in cluster.processes {
            for socket in try listeningSockets(of: process.pid).tcp {
                XCTAssertEqual(socket.address, "127.0.0.1", "\(process.name): \(socket) is not on loopback")
            }
        }
        let first = try file("first.bin", bytes: randomBytes(6_000_000))
        XCTAssertEqual(try curl(cluster, ["-T", first.path], "keepsake-cluster/first.bin").status, 200)

        let stopped = cluster.volumeServer(0)
        cluster.stopVolumeServer(0)
        XCTAssertFalse(processExists(stopped.pid))
        XCTAssertTrue(FreePort.isFree(cluster.volumePorts[0].grpc))
        XCTAssertFalse(try cluster.registeredVolumeServers().contains("127.0.0.1:\(cluster.volumePorts[0].http)"))

        let fetched = try curl(cluster, [], "keepsake-cluster/first.bin")
        XCTAssertEqual(fetched.status, 200)
        XCTAssertEqual(fetched.body, try Data(contentsOf: first), "the object did not read back whole with a volume server down")
        let second = try file("second.bin", bytes: randomBytes(1_000_000))
        XCTAssertEqual(try curl(cluster, ["-T", second.path], "keepsake-cluster/second.bin").status, 200)
        XCTAssertEqual(try curl(cluster, [], "keepsake-cluster/second.bin").body, try Data(contentsOf: second))

        try cluster.restartVolumeServer(0)
        XCTAssertNotEqual(cluster.volumeServer(0).pid, stopped.pid)
        XCTAssertEqual(try cluster.registeredVolumeServers().count, 3)

        // A crash this time: another volume server is killed, and the first object still reads back.
        let crashed = cluster.volumeServer(1)
        crashed.kill()
        XCTAssertFalse(processExists(crashed.pid))
        XCTAssertEqual(try curl(cluster, [], "keepsake-cluster/first.bin").body, try Data(contentsOf: first),
                       "the object did not read back whole after a volume server crashed")

        let pids = cluster.processes.map(\.pid)
        XCTAssertEqual(pids.count, 5)
        cluster.stop()
        for pid in pids { XCTAssertFalse(processExists(pid), "pid \(pid) is still there after stop()") }
    }

    // MARK: sshd and rclone's sftp backend

    func testRcloneUsesAFolderOverSFTP() throws {
        let server = try SSHServer()
        ssh = server
        let sockets = try listeningSockets(of: server.process.pid)
        XCTAssertEqual(sockets.tcp.map { "\($0.address):\($0.port)" }, ["127.0.0.1:\(server.port)"])

        let config = try server.rcloneConfig(remoteName: "ks")
        let folder = server.folder.path
        let empty = try rclone(config, ["lsjson", config.remote(folder)])
        XCTAssertEqual(empty.status, 0, empty.errors)
        XCTAssertEqual(try listing(empty.body), [:])

        let text = "0123456789abcdef"
        let input = try file("input.txt", bytes: Array(text.utf8))
        let written = try rclone(config, ["rcat", config.remote(folder + "/a.txt")], input: input)
        XCTAssertEqual(written.status, 0, written.errors)
        XCTAssertEqual(try String(contentsOfFile: folder + "/a.txt", encoding: .utf8), text)

        let part = try rclone(config, ["cat", "--offset", "3", "--count", "4", config.remote(folder + "/a.txt")])
        XCTAssertEqual(part.status, 0, part.errors)
        XCTAssertEqual(part.text, "3456")

        let moved = try rclone(config, ["moveto", config.remote(folder + "/a.txt"), config.remote(folder + "/sub/b.txt")])
        XCTAssertEqual(moved.status, 0, moved.errors)
        // Through RCLONE_CONFIG this time, as config.environment sets it.
        let afterMove = try run("/usr/bin/rclone", ["lsjson", "-R", "--files-only", config.remote(folder)],
                                environment: config.environment)
        XCTAssertEqual(afterMove.status, 0, afterMove.errors)
        XCTAssertEqual(try listing(afterMove.body), ["sub/b.txt": 16])

        let deleted = try rclone(config, ["deletefile", config.remote(folder + "/sub/b.txt")])
        XCTAssertEqual(deleted.status, 0, deleted.errors)
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/sub/b.txt"))
        XCTAssertEqual(try listing(try rclone(config, ["lsjson", "-R", "--files-only", config.remote(folder)]).body), [:])

        let pid = server.process.pid
        server.stop()
        XCTAssertFalse(processExists(pid), "sshd (pid \(pid)) is still there after stop()")
        XCTAssertTrue(FreePort.isFree(server.port))
    }

    // MARK: Ports across test processes

    /// Test classes run side by side in separate processes: a port another live process has
    /// claimed is never handed out, a claim whose process is gone is taken over, and a claim
    /// names the process that holds it.
    func testAPortClaimedByAnotherLiveProcessIsNotHandedOut() throws {
        let folder = try XCTUnwrap(scratch).appendingPathComponent("ports").path
        XCTAssertTrue(FreePort.claimAcrossProcesses(40_002, in: folder), "a port nobody claimed")
        XCTAssertEqual(try String(contentsOfFile: folder + "/40002", encoding: .utf8), "\(getpid())\n")

        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["30"]
        try sleeper.run()
        defer { sleeper.terminate(); sleeper.waitUntilExit() }
        try "\(sleeper.processIdentifier)\n".write(toFile: folder + "/40000", atomically: true, encoding: .utf8)
        XCTAssertFalse(FreePort.claimAcrossProcesses(40_000, in: folder), "a port a live process holds")

        let finished = Process()
        finished.executableURL = URL(fileURLWithPath: "/bin/true")
        try finished.run()
        finished.waitUntilExit()
        try "\(finished.processIdentifier)\n".write(toFile: folder + "/40001", atomically: true, encoding: .utf8)
        XCTAssertTrue(FreePort.claimAcrossProcesses(40_001, in: folder), "the claim of a process that is gone")
        XCTAssertEqual(try String(contentsOfFile: folder + "/40001", encoding: .utf8), "\(getpid())\n")

        // FreePort's own picks are claimed in the shared folder, under this process's pid.
        let picked = try FreePort.pick(3)
        for port in picked {
            XCTAssertEqual(try? String(contentsOfFile: FreePort.claimsFolder + "/\(port)", encoding: .utf8), "\(getpid())\n")
        }
    }

    // MARK: Clients

    /// What a command wrote and how it ended.
    private struct Outcome {
        let status: Int32
        let body: Data
        let errors: String
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// curl against the server's S3 endpoint, signed with SigV4 (`--aws-sigv4`) unless `signed`
    /// is false; the outcome's status is the HTTP status. Uploads use `-T`: curl 7.88 signs
    /// `-X PUT --data-binary` as a POST, which SeaweedFS rightly refuses.
    private func curl(_ server: SeaweedServer, _ options: [String], _ path: String,
                      accessKey: String? = nil, secret: String? = nil, signed: Bool = true) throws -> Outcome {
        try curl(endpoint: server.endpoint, region: server.region, options, path,
                 accessKey: accessKey ?? server.accessKey, secret: secret ?? server.secretKey, signed: signed)
    }

    private func curl(_ cluster: SeaweedCluster, _ options: [String], _ path: String) throws -> Outcome {
        try curl(endpoint: cluster.endpoint, region: cluster.region, options, path,
                 accessKey: cluster.accessKey, secret: cluster.secretKey, signed: true)
    }

    private func curl(endpoint: URL, region: String, _ options: [String], _ path: String,
                      accessKey: String, secret: String, signed: Bool) throws -> Outcome {
        let body = try temporaryFile("curl-body")
        var arguments = ["-sS", "--noproxy", "*", "--max-time", "60", "-o", body.path, "-w", "%{http_code}"]
        if signed { arguments += ["--aws-sigv4", "aws:amz:\(region):s3", "--user", "\(accessKey):\(secret)"] }
        let outcome = try run("/usr/bin/curl", arguments + options + ["\(endpoint.absoluteString)/\(path)"])
        XCTAssertEqual(outcome.status, 0, "curl: \(outcome.errors)")
        let content = (try? Data(contentsOf: body)) ?? Data()
        return Outcome(status: Int32(outcome.text) ?? -1, body: content, errors: outcome.errors)
    }

    /// rclone with `--config <file>`, failing fast rather than retrying.
    private func rclone(_ config: SSHServer.RcloneConfig, _ arguments: [String], input: URL? = nil) throws -> Outcome {
        try run("/usr/bin/rclone", ["--config", config.file.path, "--retries", "1", "--low-level-retries", "1"] + arguments,
                environment: config.environment, input: input)
    }

    /// rclone lsjson output as path → size.
    private func listing(_ json: Data) throws -> [String: Int] {
        struct Entry: Decodable {
            let Path: String
            let Size: Int
        }
        let entries = try JSONDecoder().decode([Entry].self, from: json)
        return Dictionary(entries.map { ($0.Path, $0.Size) }, uniquingKeysWith: { first, _ in first })
    }

    /// Runs a program to its end, its output and errors in files (no pipe to fill up).
    private func run(_ program: String, _ arguments: [String],
                     environment: [String: String]? = nil, input: URL? = nil) throws -> Outcome {
        let output = try temporaryFile("stdout")
        let errors = try temporaryFile("stderr")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let outputHandle = try FileHandle(forWritingTo: output)
        let errorHandle = try FileHandle(forWritingTo: errors)
        defer {
            try? outputHandle.close()
            try? errorHandle.close()
        }
        process.standardOutput = outputHandle
        process.standardError = errorHandle
        process.standardInput = try input.map { try FileHandle(forReadingFrom: $0) } ?? FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, body: try Data(contentsOf: output),
                       errors: String(decoding: try Data(contentsOf: errors), as: UTF8.self))
    }

    // MARK: Sockets and processes

    /// A listening socket: its local address and port.
    private struct Socket: CustomStringConvertible {
        let address: String
        let port: UInt16
        var description: String { "\(address):\(port)" }
    }

    /// The TCP and UDP sockets `pid` listens on, from `ss -Hltnp` and `ss -Hlunp`.
    private func listeningSockets(of pid: pid_t) throws -> (tcp: [Socket], udp: [Socket]) {
        func parse(_ flags: String) throws -> [Socket] {
            let outcome = try run("/usr/bin/ss", [flags])
            XCTAssertEqual(outcome.status, 0, outcome.errors)
            return outcome.text.split(separator: "\n").filter { $0.contains("pid=\(pid),") }.compactMap { line in
                let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard fields.count >= 5, let colon = fields[3].lastIndex(of: ":"),
                      let port = UInt16(fields[3][fields[3].index(after: colon)...]) else {
                    XCTFail("unexpected ss line: \(line)")
                    return nil
                }
                return Socket(address: String(fields[3][..<colon]), port: port)
            }
        }
        return (try parse("-Hltnp"), try parse("-Hlunp"))
    }

    /// Whether a process `pid` exists (a zombie counts: it has not been reaped).
    private func processExists(_ pid: pid_t) -> Bool {
        Glibc.kill(pid, 0) == 0 || errno != ESRCH
    }

    // MARK: Files

    private func file(_ name: String, bytes: [UInt8]) throws -> URL {
        let url = try folder().appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url
    }

    private func temporaryFile(_ label: String) throws -> URL {
        let url = try folder().appendingPathComponent("\(label)-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown)
        }
        return url
    }

    private func folder() throws -> URL {
        guard let scratch else { throw CocoaError(.fileNoSuchFile) }
        return scratch
    }

    private func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 8)
        while bytes.count < count {
            withUnsafeBytes(of: generator.next()) { bytes.append(contentsOf: $0) }
        }
        return Array(bytes.prefix(count))
    }
}
