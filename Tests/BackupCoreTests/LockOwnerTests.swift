import Foundation
import KeepsakeJSON
@testable import KeepsakeStorage
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// Issue 26 §3: a lock's holder is judged only where its pid means the same process: this
/// machine, this boot, this pid namespace. Holders are real processes (this one, a child
/// that has exited); other machines, boots and namespaces are records as those runs write them.
final class LockOwnerTests: KeepsakeTestCase {
    // MARK: Helpers

    private let here = ProcessScope.current

    /// The pid of a process that has exited (and been reaped).
    private func deadProcessID() throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        try process.run()
        process.waitUntilExit()
        return process.processIdentifier
    }

    private func owner(pid: Int32, host: String = HostIdentity.hostName, ticks: UInt64? = nil,
                       scope: ProcessScope?) -> LockOwner {
        LockOwner(pid: pid, host: host, started: Date(), operation: "backup", processStartTicks: ticks, scope: scope)
    }

    // MARK: Tests

    func testThisProcessKnowsItsMachineBootAndPidNamespace() throws {
        XCTAssertNotNil(here.boot, "no boot id in /proc")
        XCTAssertNotNil(here.pidNamespace, "no /proc/self/ns/pid")
        if let machine = here.machine {
            XCTAssertEqual(machine.count, 32, "the machine id is kept as 16 bytes of its HMAC, in hex")
            let raw = try String(contentsOfFile: "/etc/machine-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            XCTAssertFalse(raw.contains(machine) || machine.contains(raw), "the machine id itself is never recorded")
        }
        let current = LockOwner.current(operation: "backup")
        XCTAssertEqual(current.scope, here)
        let read = try XCTUnwrap(LockOwner(json: try JSONParser.parse(Array(current.json.serialized().utf8))))
        XCTAssertEqual(read.scope, current.scope, "the record reads back whole")
        XCTAssertEqual(read.pid, current.pid)
        XCTAssertEqual(read.processStartTicks, current.processStartTicks)
        XCTAssertFalse(read.isStaleOnThisHost, "a live holder is not stale")
    }

    func testADeadHolderOfThisPidNamespaceIsStale() throws {
        XCTAssertTrue(owner(pid: try deadProcessID(), scope: here).isStaleOnThisHost)
        // A recycled pid: this process, recorded with another start time.
        XCTAssertTrue(owner(pid: getpid(), ticks: 1, scope: here).isStaleOnThisHost)
    }

    /// The container case: pid 1 of another pid namespace, on a machine of the same name.
    /// Here pid 1 runs and started at another time, so its record used to be judged stale.
    func testAHolderInAnotherPidNamespaceIsNeverJudgedFromHere() throws {
        var container = here
        container.pidNamespace = "pid:[4026599999]"
        let holder = owner(pid: 1, ticks: 12_345, scope: container)
        XCTAssertFalse(holder.isStaleOnThisHost)
        XCTAssertFalse(holder.isJudgedHere)
        XCTAssertFalse(owner(pid: try deadProcessID(), scope: container).isStaleOnThisHost, "nor a pid that is gone here")
        XCTAssertTrue(LockError.held(by: holder, destination: "s3://b/p").description.contains("another container"))
    }

    func testAnotherMachineWithTheSameHostNameIsNeverJudgedFromHere() throws {
        let elsewhere = ProcessScope(machine: String(repeating: "ab", count: 16), boot: UUID().uuidString.lowercased(),
                                     pidNamespace: here.pidNamespace)
        XCTAssertFalse(owner(pid: try deadProcessID(), scope: elsewhere).isStaleOnThisHost)
        // No machine id on either side (containers): another boot is another kernel, not a reboot.
        var anonymous = elsewhere
        anonymous.machine = nil
        XCTAssertFalse(owner(pid: try deadProcessID(), scope: anonymous).isStaleOnThisHost)
    }

    func testAHolderOfAnEarlierBootOfThisMachineIsStale() throws {
        // Judged as this machine judges it, with a machine id whether or not it has one.
        var machine = here
        machine.machine = machine.machine ?? String(repeating: "cd", count: 16)
        var earlier = machine
        earlier.boot = UUID().uuidString.lowercased()
        XCTAssertTrue(machine.outlived(earlier), "its boot is over, whatever runs now")
        XCTAssertFalse(machine.sharesPidTable(with: earlier))
        XCTAssertFalse(machine.outlived(machine))
        XCTAssertTrue(machine.sharesPidTable(with: machine))
        if here.machine != nil {
            XCTAssertTrue(owner(pid: getpid(), scope: earlier).isStaleOnThisHost, "through the record, on this machine")
        }
    }

    func testARecordWithoutAScopeIsJudgedByHostNameAsBefore() throws {
        let legacy = try XCTUnwrap(LockOwner(json: try JSONParser.parse(Array(
            #"{"pid": \#(try deadProcessID()), "host": "\#(HostIdentity.hostName)", "operation": "backup"}"#.utf8))))
        XCTAssertNil(legacy.scope)
        XCTAssertTrue(legacy.isStaleOnThisHost)
        var other = legacy
        other.host = "some-other-host.example"
        XCTAssertFalse(other.isStaleOnThisHost)
    }
}
