import Foundation
import KeepsakeHashing
import KeepsakeSupport

/// Where a process id means something: the machine, its boot and the pid namespace a
/// process runs in. A lock records its holder's, so that another run judges the recorded
/// pid only where it names the same process: two containers, or two machines given one
/// host name, never take each other's live lock for a dead one.
public struct ProcessScope: Sendable, Equatable {
    // MARK: Fields

    /// This machine's id (`/etc/machine-id`), keyed through HMAC-SHA256 so that the id
    /// itself, which systemd asks to keep confidential, never reaches a shared destination;
    /// nil where there is none (many containers).
    public var machine: String?
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`): changes at every boot.
    public var boot: String?
    /// The pid namespace (`pid:[4026531836]`, from `/proc/self/ns/pid`).
    public var pidNamespace: String?

    /// Creates a scope.
    public init(machine: String?, boot: String?, pidNamespace: String?) {
        self.machine = machine
        self.boot = boot
        self.pidNamespace = pidNamespace
    }

    // MARK: This process

    /// This process's scope, read once.
    public static let current = ProcessScope(machine: machineID(), boot: firstLine("/proc/sys/kernel/random/boot_id"),
                                             pidNamespace: namespace("/proc/self/ns/pid"))

    // MARK: Judging

    /// Whether a pid recorded in `other` can be looked up in this process's pid table: the
    /// same kernel, boot and pid namespace.
    public func sharesPidTable(with other: ProcessScope) -> Bool {
        guard let boot, let pidNamespace, boot == other.boot, pidNamespace == other.pidNamespace else { return false }
        // One boot id is one kernel; a machine id, where both have one, must agree too.
        if let machine, let theirs = other.machine, machine != theirs { return false }
        return true
    }

    /// Whether every process of `other` is known gone: the same machine (both have its id)
    /// booted since.
    public func outlived(_ other: ProcessScope) -> Bool {
        guard let machine, machine == other.machine, let boot, let theirs = other.boot else { return false }
        return boot != theirs
    }

    // MARK: Reading

    /// `/etc/machine-id` (else D-Bus's copy) as HMAC-SHA256(id, "keepsake lock"), in hex.
    private static func machineID() -> String? {
        for file in ["/etc/machine-id", "/var/lib/dbus/machine-id"] {
            guard let line = firstLine(file), HexEncoding.isHex(line, length: 32) else { continue }
            return HexEncoding.encode(Array(HMACSHA256.mac(key: Array(line.utf8), message: Array("keepsake lock".utf8)).prefix(16)))
        }
        return nil
    }

    private static func firstLine(_ path: String) -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        return line.isEmpty || line.count > 64 ? nil : line
    }

    private static func namespace(_ link: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 128)
        let count = readlink(link, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
