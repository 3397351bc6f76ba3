import Foundation

/// Cached look-ups between user/group ids and names (the passwd and group databases are
/// slow to ask once per file).
public final class UserNames: Sendable {
    // MARK: Shared instance

    /// The process-wide cache.
    public static let shared = UserNames()

    private let users = LockedValue<[UInt32: String?]>([:])
    private let groups = LockedValue<[UInt32: String?]>([:])
    private let userIDs = LockedValue<[String: UInt32?]>([:])
    private let groupIDs = LockedValue<[String: UInt32?]>([:])

    // MARK: Look-ups

    /// The name of user `uid`, if it has one.
    public func userName(for uid: UInt32) -> String? {
        if let cached = users.withLock({ $0[uid] }) { return cached }
        var record = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        var name: String?
        if getpwuid_r(uid, &record, &buffer, buffer.count, &result) == 0, result != nil {
            name = PathBytes.fromCString(record.pw_name).flatMap(PathBytes.validString)
        }
        users.withLock { $0[uid] = .some(name) }
        return name
    }

    /// The name of group `gid`, if it has one.
    public func groupName(for gid: UInt32) -> String? {
        if let cached = groups.withLock({ $0[gid] }) { return cached }
        var record = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 4096)
        var name: String?
        if getgrgid_r(gid, &record, &buffer, buffer.count, &result) == 0, result != nil {
            name = PathBytes.fromCString(record.gr_name).flatMap(PathBytes.validString)
        }
        groups.withLock { $0[gid] = .some(name) }
        return name
    }

    /// The id of the user called `name` on this machine.
    public func userID(named name: String) -> UInt32? {
        if let cached = userIDs.withLock({ $0[name] }) { return cached }
        var record = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        var id: UInt32?
        if getpwnam_r(name, &record, &buffer, buffer.count, &result) == 0, result != nil { id = record.pw_uid }
        userIDs.withLock { $0[name] = .some(id) }
        return id
    }

    /// The id of the group called `name` on this machine.
    public func groupID(named name: String) -> UInt32? {
        if let cached = groupIDs.withLock({ $0[name] }) { return cached }
        var record = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 4096)
        var id: UInt32?
        if getgrnam_r(name, &record, &buffer, buffer.count, &result) == 0, result != nil { id = record.gr_gid }
        groupIDs.withLock { $0[name] = .some(id) }
        return id
    }
}
