import KeepsakeSupport

/// Which hosts' backups a command acts on, in a destination several hosts back up to:
/// each keeps its own chains, and prunes and restores its own unless told otherwise.
public enum HostSelection: Sendable, Equatable {
    /// The backups made on the host of this name (as their summaries record it).
    case only(String)
    /// Every host's.
    case all

    /// Whether backups made on `host` are selected.
    public func includes(_ host: String) -> Bool {
        switch self {
        case .only(let name): return name == host
        case .all: return true
        }
    }

    /// This host's backups unless `host` (`--host`) or `allHosts` (`--all-hosts`) says otherwise.
    public static func from(host: String?, allHosts: Bool) -> HostSelection {
        if allHosts { return .all }
        return .only(host ?? HostIdentity.hostName)
    }
}
