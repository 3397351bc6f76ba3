import Foundation
import KeepsakeJSON
import KeepsakeSupport

/// Who holds (or wants) a destination's lock.
public struct LockOwner: Sendable, Equatable {
    // MARK: Fields

    public var pid: Int32
    public var host: String
    public var started: Date
    /// What the holder is doing (`backup`), for messages.
    public var operation: String
    /// The process's start time in clock ticks since boot (from /proc), so a recycled pid
    /// is not mistaken for the holder.
    public var processStartTicks: UInt64?
    /// The machine, boot and pid namespace `pid` belongs to; nil in records written before
    /// Keepsake kept it (those are judged by host name, as they were).
    public var scope: ProcessScope?

    /// Creates an owner record.
    public init(pid: Int32, host: String, started: Date, operation: String, processStartTicks: UInt64?,
                scope: ProcessScope? = nil) {
        self.pid = pid
        self.host = host
        self.started = started
        self.operation = operation
        self.processStartTicks = processStartTicks
        self.scope = scope
    }

    /// Stands for a holder whose lock record cannot be read (being written, or garbled).
    package static var unknownHolder: LockOwner {
        LockOwner(pid: 0, host: "unknown", started: Date(), operation: "another run", processStartTicks: nil)
    }

    /// This process, about to do `operation`.
    public static func current(operation: String) -> LockOwner {
        let pid = getpid()
        return LockOwner(pid: pid, host: HostIdentity.hostName, started: Date(), operation: operation,
                         processStartTicks: LockOwner.startTicks(of: pid), scope: .current)
    }

    // MARK: Liveness

    /// True when the owner's process is known gone: its machine booted since, or it ran in
    /// this kernel's pid namespace and its pid is gone (or is another process with a
    /// recycled pid). A holder in another container, or on another machine with the same
    /// host name, is never judged from here: its pid means another process here.
    public var isStaleOnThisHost: Bool {
        if let scope {
            let here = ProcessScope.current
            if here.outlived(scope) { return true }
            guard here.sharesPidTable(with: scope) else { return false }
        } else {
            guard host == HostIdentity.hostName else { return false }
        }
        if kill(pid, 0) != 0 && errno == ESRCH { return true }
        if let recorded = processStartTicks, let now = LockOwner.startTicks(of: pid), recorded != now { return true }
        return false
    }

    /// Field 22 of /proc/PID/stat: when the process started, in ticks since boot.
    static func startTicks(of pid: Int32) -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let closing = text.lastIndex(of: ")") else { return nil }
        // Fields after the command name (which may hold spaces) start at field 3.
        let fields = text[text.index(after: closing)...].split(separator: " ")
        guard fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }

    // MARK: Encoding

    /// The lock file's content.
    package var json: JSONValue {
        var object = JSONObject([
            ("pid", .int(Int64(pid))),
            ("host", .string(host)),
            ("started", .string(Timestamp.iso8601(started))),
            ("operation", .string(operation)),
        ])
        if let processStartTicks { object["start_ticks"] = .int(Int64(clamping: processStartTicks)) }
        if let scope {
            if let machine = scope.machine { object["machine"] = .string(machine) }
            if let boot = scope.boot { object["boot_id"] = .string(boot) }
            if let namespace = scope.pidNamespace { object["pid_ns"] = .string(namespace) }
        }
        return .object(object)
    }

    /// Reads a lock file's content; nil when it is not one.
    package init?(json: JSONValue) {
        guard let pid = json["pid"]?.int64Value, let narrowed = Int32(exactly: pid),
              let host = json["host"]?.stringValue else { return nil }
        self.init(pid: narrowed, host: host,
                  started: json["started"]?.stringValue.flatMap(Timestamp.parseISO8601) ?? Date(timeIntervalSince1970: 0),
                  operation: json["operation"]?.stringValue ?? "unknown",
                  processStartTicks: json["start_ticks"]?.int64Value.flatMap { UInt64(exactly: $0) })
        // A record with a boot id was written with its scope (a machine id may be missing).
        if let boot = json["boot_id"]?.stringValue {
            scope = ProcessScope(machine: json["machine"]?.stringValue, boot: boot, pidNamespace: json["pid_ns"]?.stringValue)
        }
    }

    /// Whether this process can tell if the owner still runs: it ran on this machine, in
    /// this pid namespace or a boot since gone (records without a scope: on this host name).
    public var isJudgedHere: Bool {
        guard let scope else { return host == HostIdentity.hostName }
        return ProcessScope.current.sharesPidTable(with: scope) || ProcessScope.current.outlived(scope)
    }
}

/// A held destination lock; released by `release()` (also safe to call twice).
public protocol DestinationLock: AnyObject {
    /// The holder whose stale lock was taken over, if any.
    var tookOverFrom: LockOwner? { get }
    /// What the holder should be told about the destination (other users can write to it),
    /// one sentence each.
    var warnings: [String] { get }
    /// Gives the lock back.
    func release()
}

extension DestinationLock {
    public var warnings: [String] { [] }
}

/// The destination is locked by another run.
public enum LockError: Error, Sendable, Equatable, CustomStringConvertible {
    case held(by: LockOwner, destination: String)

    public var description: String {
        switch self {
        case .held(let owner, let destination):
            // Another host's pid cannot be checked from here: say how such a lock goes away
            // when its run died, so that nobody deletes a live one by hand.
            let elsewhere = owner.isJudgedHere ? ""
                : owner.host == HostIdentity.hostName
                ? " (it runs in another container, or on another machine named \(owner.host): if it ended without cleaning "
                    + "up, the next keepsake run there takes the lock over)"
                : " (if it ended without cleaning up, the next keepsake run on \(owner.host) takes the lock over)"
            return "\(destination) is locked by \(owner.operation) pid \(owner.pid) on \(owner.host), "
                + "started \(Timestamp.iso8601(owner.started)); wait for it to finish" + elsewhere
        }
    }
}
