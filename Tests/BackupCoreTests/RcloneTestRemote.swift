import Foundation
@testable import KeepsakeStorage
@testable import KeepsakeRclone
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// An rclone remote to test the rclone backend against: its name in an rclone configuration
/// file, and a folder on it under which every destination of a test is made. The tests
/// themselves look at the remote through their own rclone runs (Foundation's `Process`), not
/// through the backend under test.
///
/// `local(in:)` makes a remote of type `local` in a temporary configuration; another remote
/// (an sftp server for tests) is `RcloneTestRemote(name: "sftp-test", configPath: …,
/// basePath: "upload/keepsake")`, and its test class calls the same `conformanceSuite()` and
/// `RcloneBackendChecks` as `RcloneConformanceTests` does.
struct RcloneTestRemote {
    // MARK: Configuration

    /// The remote's section name in the configuration file.
    var name: String
    /// The rclone configuration file (passed to the backend as RCLONE_CONFIG).
    var configPath: String
    /// The folder on the remote under which destinations are made.
    var basePath: String

    /// A remote of type `local` whose folders lie under `root`, configured in `root/rclone.conf`.
    static func local(in root: String) throws -> RcloneTestRemote {
        let configPath = root + "/rclone.conf"
        try writeFile(configPath, "[keepsake-test-local]\ntype = local\n")
        return RcloneTestRemote(name: "keepsake-test-local", configPath: configPath, basePath: root + "/remote")
    }

    /// This process's environment with RCLONE_CONFIG naming the configuration file.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["RCLONE_CONFIG"] = configPath
        return environment
    }

    // MARK: Backends

    /// A fresh (not yet existing) destination path on the remote.
    func freshPath() -> String {
        basePath + "/dest-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
    }

    /// A backend for `path` (a fresh one by default) on this remote.
    func backend(path: String? = nil, remoteName: String? = nil, rclone: String = "rclone",
                 cancellation: CancellationFlag? = nil) -> RcloneBackend {
        RcloneBackend(remote: remoteName ?? name, path: path ?? freshPath(), rclone: rclone, environment: environment,
                      cancellation: cancellation)
    }

    /// The conformance suite on fresh destinations of this remote.
    func conformanceSuite() -> StorageConformanceSuite {
        StorageConformanceSuite(
            makeBackend: { backend() },
            rawNames: { try rawNames(of: $0) },
            plantLock: { backend, owner in
                try put(Array((owner.json.serialized() + "\n").utf8), as: RcloneBackend.lockName, in: backend)
            },
            plantLeftover: { backend in
                let name = FolderNaming.temporaryPrefix + "box_x.tar.zst-\(StorageConformanceSuite.deadPID)-"
                    + String(UInt32.random(in: 0...UInt32.max), radix: 16)
                try put(Array("half an archive".utf8), as: name, in: backend)
                return name
            },
            isTemporaryName: { $0.hasPrefix(FolderNaming.temporaryPrefix) },
            lockName: RcloneBackend.lockName
        )
    }

    // MARK: Looking at the remote

    /// What `rclone` run with `arguments` gave.
    struct Run {
        var status: Int32
        var output: [UInt8]
        var error: String
    }

    /// Runs rclone (found on PATH) with this remote's configuration.
    func rclone(_ arguments: [String], input: [UInt8] = []) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["rclone", "--config", configPath, "-q"] + arguments
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        try stdin.fileHandleForWriting.write(contentsOf: input)
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let error = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, output: Array(output), error: String(decoding: error, as: UTF8.self))
    }

    /// Runs rclone and fails unless it succeeds.
    @discardableResult
    func rcloneSucceeding(_ arguments: [String], input: [UInt8] = [], file: StaticString = #filePath,
                          line: UInt = #line) throws -> [UInt8] {
        let run = try rclone(arguments, input: input)
        XCTAssertEqual(run.status, 0, "rclone \(arguments): \(run.error)", file: file, line: line)
        return run.output
    }

    /// The remote path of `name` in `backend`'s destination.
    func remotePath(_ name: String, in backend: WritableStorage) throws -> String {
        try XCTUnwrap(backend as? RcloneBackend).objectPath(name)
    }

    /// Every name in the destination's folder (files and folders), sorted; none when it does
    /// not exist.
    func rawNames(of backend: WritableStorage) throws -> [String] {
        let rclone = try XCTUnwrap(backend as? RcloneBackend)
        let run = try self.rclone(["lsf", "--", try rclone.objectPath(nil)])
        if run.status == 3 { return [] }
        XCTAssertEqual(run.status, 0, run.error)
        return String(decoding: run.output, as: UTF8.self).split(separator: "\n")
            .map { $0.hasSuffix("/") ? String($0.dropLast()) : String($0) }.sorted()
    }

    /// Stores `bytes` as `name` straight through rclone, as another run (or a crash) would
    /// have left it.
    func put(_ bytes: [UInt8], as name: String, in backend: WritableStorage) throws {
        try rcloneSucceeding(["rcat", "--", try remotePath(name, in: backend)], input: bytes)
    }

    /// The bytes of `name`, read straight through rclone.
    func contents(of name: String, in backend: WritableStorage) throws -> [UInt8] {
        try rcloneSucceeding(["cat", "--", try remotePath(name, in: backend)])
    }

    /// Sets the modification time of `name` (UTC, `2006-01-02T15:04:05`).
    func touch(_ name: String, in backend: WritableStorage, at timestamp: String) throws {
        try rcloneSucceeding(["touch", "--no-create", "--timestamp", timestamp, "--", try remotePath(name, in: backend)])
    }
}
