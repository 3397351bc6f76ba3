import BackupCore
import Foundation
import KeepsakeSupport

#if canImport(Glibc)
import Glibc
#endif

/// A small SeaweedFS cluster on 127.0.0.1, one process per server: a master
/// (`-defaultReplication=001`: every object on two volume servers of the rack,
/// `-volumeSizeLimitMB=64`), volume servers (three by default), a filer and an S3 gateway, for
/// tests of what object storage does when a storage node goes away.
///
/// Every port is a free one picked by `FreePort`; every server binds 127.0.0.1 only. Data,
/// configuration and logs live in a temporary directory removed by `stop()` (idempotent, also
/// run from `deinit`). Volume servers can be stopped and restarted by index; a restarted one
/// gets its old ports and folder back, and is started only once its predecessor's pid is gone
/// (otherwise its gRPC port is still taken, it exits with "address already in use", and writes
/// then fail with "no volume server capacity").
public final class SeaweedCluster: Sendable {
    // MARK: Types

    /// The two ports of one weed server (HTTP, and gRPC).
    public struct Ports: Sendable, Equatable {
        /// The HTTP port.
        public let http: UInt16
        /// The gRPC port: HTTP + 10000, where weed looks by default (and also given explicitly).
        public let grpc: UInt16
        /// `127.0.0.1:http.grpc`, how one weed server names another's two ports.
        public var address: String { "127.0.0.1:\(http).\(grpc)" }
    }

    // MARK: Properties

    /// The S3 endpoint, `http://127.0.0.1:<port>` (path-style requests).
    public let endpoint: URL
    /// The region to sign requests for.
    public let region = "us-east-1"
    /// The access key to sign with (any value works with `.open` access).
    public let accessKey: String
    /// The secret key to sign with (any value works with `.open` access).
    public let secretKey: String
    /// The buckets created at start.
    public let buckets: [String]
    /// The master's ports.
    public let masterPorts: Ports
    /// Each volume server's ports, by index.
    public let volumePorts: [Ports]
    /// The filer's ports.
    public let filerPorts: Ports
    /// The S3 gateway's ports.
    public let s3Ports: Ports

    /// The master, filer and S3 gateway processes.
    private let master, filer, s3: ServerProcess
    /// The volume servers by index (replaced on restart).
    private let volumes: LockedValue<[ServerProcess]>
    /// How a volume server is started, by index.
    private let volumeArguments: [[String]]
    private let weed: String
    private let directory: URL

    // MARK: Starting

    /// Starts the cluster with `volumeServers` volume servers, creates `buckets` and returns once
    /// every volume server has registered with the master, a write into the first bucket's
    /// collection succeeded (two volume servers must take it) and the S3 gateway answers;
    /// throws (with the tail of the log concerned) if that takes longer than `timeout`, or if
    /// `weed` is not installed (run Scripts/test-servers).
    public init(
        volumeServers: Int = 3,
        buckets: [String] = ["keepsake-test"],
        access: SeaweedServer.Access = .open,
        timeout: Duration = .seconds(90)
    ) throws {
        precondition(volumeServers >= 2, "replication 001 needs two volume servers")
        weed = try SeaweedServer.weedExecutable()
        try buckets.forEach(SeaweedServer.validate(bucket:))
        let pairs = try FreePort.pickPairs(volumeServers + 3, offset: SeaweedServer.grpcOffset).map { Ports(http: $0.0, grpc: $0.1) }
        masterPorts = pairs[0]
        filerPorts = pairs[1]
        s3Ports = pairs[2]
        volumePorts = Array(pairs[3...])
        self.buckets = buckets
        endpoint = URL(string: "http://127.0.0.1:\(s3Ports.http)") ?? URL(fileURLWithPath: "/")
        switch access {
        case .open:
            accessKey = "keepsake-open"
            secretKey = "keepsake-open-secret"
        case let .enforced(key, secret):
            accessKey = key
            secretKey = secret
        }
        let directory = try ScratchDirectory.make("weeds")
        self.directory = directory
        let loopback = ["-ip=127.0.0.1", "-ip.bind=127.0.0.1"]
        let masterAddress = masterPorts.address
        var volumeArguments: [[String]] = []
        for (index, ports) in volumePorts.enumerated() {
            volumeArguments.append(["volume"] + loopback + [
                "-port=\(ports.http)", "-port.grpc=\(ports.grpc)",
                "-dir=\(directory.path)/volume\(index)", "-master=\(masterAddress)",
                "-max=20", "-preStopSeconds=1",
            ])
        }
        self.volumeArguments = volumeArguments
        var started: [ServerProcess] = []
        do {
            for index in volumePorts.indices { _ = try ScratchDirectory.subdirectory("volume\(index)", of: directory) }
            let masterDirectory = try ScratchDirectory.subdirectory("master", of: directory)
            let filerDirectory = try ScratchDirectory.subdirectory("filer", of: directory)
            let master = try Self.start("master", weed: weed, in: directory, arguments: ["master"] + loopback + [
                "-port=\(masterPorts.http)", "-port.grpc=\(masterPorts.grpc)", "-mdir=\(masterDirectory.path)",
                "-defaultReplication=001", "-volumeSizeLimitMB=64", "-telemetry=false",
            ])
            started.append(master)
            // A volume server whose first heartbeat finds no leader yet retries only 5 s later.
            try master.waitForPort(masterPorts.http, timeout: timeout)
            let statusPort = masterPorts.http
            try master.waitUntil("became the leader", timeout: timeout) {
                let answer = try? LoopbackHTTP.request("GET", port: statusPort, path: "/cluster/status")
                return answer?.text.replacingOccurrences(of: " ", with: "").contains("\"IsLeader\":true") == true
            }
            var volumes: [ServerProcess] = []
            for (index, arguments) in volumeArguments.enumerated() {
                let volume = try Self.start("volume\(index)", weed: weed, in: directory, arguments: arguments)
                started.append(volume)
                volumes.append(volume)
            }
            let filer = try Self.start("filer", weed: weed, in: directory, arguments: ["filer"] + loopback + [
                "-port=\(filerPorts.http)", "-port.grpc=\(filerPorts.grpc)", "-master=\(masterAddress)",
                "-defaultStoreDir=\(filerDirectory.path)", "-localSocket=\(directory.path)/filer.sock",
            ])
            started.append(filer)
            var s3Arguments = ["s3"] + loopback + [
                "-port=\(s3Ports.http)", "-port.grpc=\(s3Ports.grpc)", "-port.iceberg=0", "-port.lance=0",
                "-filer=\(filerPorts.address)", "-localSocket=\(directory.path)/s3.sock",
            ]
            if case .enforced = access {
                s3Arguments.append("-config=\(try SeaweedServer.writeIdentities(access, in: directory).path)")
            }
            let s3 = try Self.start("s3", weed: weed, in: directory, arguments: s3Arguments)
            started.append(s3)
            self.master = master
            self.filer = filer
            self.s3 = s3
            self.volumes = LockedValue(volumes)
        } catch {
            ServerProcess.stopAll(started)
            ScratchDirectory.remove(directory)
            throw error
        }
        do {
            for index in volumePorts.indices { try waitForVolumeServer(index, timeout: timeout) }
            try filer.waitForPort(filerPorts.http, timeout: timeout)
            try s3.waitForPort(s3Ports.http, timeout: timeout)
            try SeaweedServer.prepare(buckets: buckets, filer: filer, filerPort: filerPorts.http,
                                      s3: s3, s3Port: s3Ports.http, timeout: timeout)
        } catch {
            stop()
            throw error
        }
    }

    /// Creates another bucket (through the filer).
    public func createBucket(_ name: String) throws {
        try SeaweedServer.validate(bucket: name)
        try SeaweedServer.createBucket(name, filerPort: filerPorts.http)
    }

    // MARK: Volume servers

    /// How many volume servers the cluster has (running or not).
    public var volumeServerCount: Int { volumePorts.count }

    /// The volume server process at `index` (the current one, after a restart).
    public func volumeServer(_ index: Int) -> ServerProcess {
        volumes.withLock { $0[index] }
    }

    /// Stops the volume server at `index` (SIGTERM; it stops heartbeats first, so the master
    /// drops it) and waits for its pid. Idempotent.
    public func stopVolumeServer(_ index: Int) {
        volumeServer(index).stop()
    }

    /// Starts the volume server at `index` again on its old ports and folder (stopping it first
    /// if it runs), and waits until the master lists it.
    public func restartVolumeServer(_ index: Int, timeout: Duration = .seconds(60)) throws {
        let old = volumeServer(index)
        old.stop()
        SeaweedServer.removeGRPCSockets(ports: [volumePorts[index].grpc])
        let new = try Self.start("volume\(index)", weed: weed, in: directory, arguments: volumeArguments[index])
        volumes.withLock { $0[index] = new }
        try waitForVolumeServer(index, timeout: timeout)
    }

    /// The volume servers the master currently lists, as "127.0.0.1:<port>".
    public func registeredVolumeServers() throws -> Set<String> {
        struct Status: Decodable {
            struct Topology: Decodable { let DataCenters: [DataCenter]? }
            struct DataCenter: Decodable { let Racks: [Rack]? }
            struct Rack: Decodable { let DataNodes: [DataNode]? }
            struct DataNode: Decodable { let Url: String }
            let Topology: Topology
        }
        let answer = try LoopbackHTTP.request("GET", port: masterPorts.http, path: "/dir/status")
        guard answer.status == 200 else { throw ServerProcess.Failure("the master's /dir/status: HTTP \(answer.status)") }
        let status = try JSONDecoder().decode(Status.self, from: Data(answer.body))
        let nodes = (status.Topology.DataCenters ?? []).flatMap { $0.Racks ?? [] }.flatMap { $0.DataNodes ?? [] }
        return Set(nodes.map(\.Url))
    }

    /// Waits until the volume server at `index` listens and the master lists it.
    private func waitForVolumeServer(_ index: Int, timeout: Duration) throws {
        let volume = volumeServer(index)
        let ports = volumePorts[index]
        try volume.waitForPort(ports.http, timeout: timeout)
        try volume.waitForPort(ports.grpc, timeout: timeout)
        // Its first heartbeat can reach a master not yet leader; the next comes 5 s later.
        try volume.waitUntil("registered with the master", timeout: timeout) {
            (try? registeredVolumeServers().contains("127.0.0.1:\(ports.http)")) == true
        }
    }

    // MARK: Processes

    /// Every process of the cluster that is running now (for checks such as `ss -ltnp`).
    public var processes: [ServerProcess] {
        ([s3, filer, master] + volumes.withLock { $0 }).filter(\.isRunning)
    }

    // MARK: Stopping

    /// Stops the S3 gateway, then the filer, then the volume servers together, then the master,
    /// each waited for; removes the temporary directory. Idempotent. The filer is killed after
    /// 2 s: on SIGTERM its gRPC server waits 15 s for the filer's own metadata subscription to
    /// itself to end, and only then exits (whatever the state of the master).
    public func stop() {
        s3.stop()
        filer.stop(grace: .seconds(2))
        ServerProcess.stopAll(volumes.withLock { $0 })
        master.stop()
        SeaweedServer.removeGRPCSockets(ports: ([masterPorts, filerPorts, s3Ports] + volumePorts).map(\.grpc))
        ScratchDirectory.remove(directory)
    }

    deinit {
        stop()
    }

    /// Starts one weed server with its log `<name>.log` in the cluster's directory.
    private static func start(_ name: String, weed: String, in directory: URL, arguments: [String]) throws -> ServerProcess {
        try ServerProcess(
            name: "weed \(name)",
            executable: weed,
            arguments: arguments,
            environment: SeaweedServer.environment(home: directory),
            logFile: directory.appendingPathComponent("\(name).log"),
            workingDirectory: directory
        )
    }
}
