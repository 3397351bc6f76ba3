import Foundation
@testable import KeepsakeEncryption
import KeepsakeStorage
import KeepsakeSupport

@testable import BackupCore

// MARK: - Destinations without keys

// The engine takes its keyring as a value beside the store, with no default, so that no
// command can forget it. These tests back up without encryption: the empty keyring is
// spelt once here.

extension KeyedStorage {
    /// `stored` read with no key.
    init(_ stored: any ReadableStorage) {
        self.init(stored, keyring: .empty)
    }
}

extension BackupCatalog {
    /// A catalog of `storage`, read with no key.
    convenience init(storage: any ReadableStorage) {
        self.init(storage: storage, keyring: .empty)
    }
}

extension BackupEngine {
    /// An engine storing into `storage`, with no key.
    convenience init(storage: any WritableStorage, events: EngineEventSink?, cancellation: CancellationFlag) {
        self.init(storage: storage, keyring: .empty, events: events, cancellation: cancellation)
    }
}

extension PruneEngine {
    /// An engine pruning `storage`, with no key.
    convenience init(storage: any WritableStorage, events: EngineEventSink?, cancellation: CancellationFlag) {
        self.init(storage: storage, keyring: .empty, events: events, cancellation: cancellation)
    }
}

extension RunWorkflow {
    /// A run against `storage`, with no key.
    convenience init(storage: any WritableStorage, events: EngineEventSink?, cancellation: CancellationFlag) {
        self.init(storage: storage, keyring: .empty, events: events, cancellation: cancellation)
    }
}

extension Verifier {
    /// Verifies `item` in the destination `destination`, read with no key, noting damage
    /// there as `keepsake verify` does.
    func verify(_ item: BackupCatalog.Item, in destination: any WritableStorage) throws -> VerifyReport {
        damageRecords = destination
        return try verify(item, in: KeyedStorage(destination))
    }
}

extension SidecarManifest {
    /// The whole manifest object `name` in `storage`, decompressed (no key).
    static func read(_ name: String, from storage: any ReadableStorage) throws -> [UInt8] {
        try read(name, from: KeyedStorage(storage))
    }
}
