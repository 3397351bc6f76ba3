import Foundation
import KeepsakeEncryption
import KeepsakeModel
import KeepsakeStorage
import KeepsakeSupport

/// The supplements committed in a destination (see `SupplementManifest`), looked up by the
/// backup a file came from and its path. Readers of a kept backup whose files lie in a
/// backup that prune let go find them here: `relocating` points such entries at the
/// supplement that holds them, so a restore reads it like any earlier archive, and every
/// file is still checked against the kept backup's own SHA-256.
public struct SupplementShelf: Sendable {
    // MARK: State

    /// Every committed supplement whose manifest reads, oldest first.
    public private(set) var supplements: [SupplementManifest] = []
    /// Supplement manifests that could not be read, by name, with the reason.
    public private(set) var unreadable: [(name: String, reason: String)] = []
    /// Where each held file is: the supplement's position in `supplements` and the entry's,
    /// oldest supplement first.
    private var held: [SupplementManifest.HeldFile: [(supplement: Int, entry: Int)]] = [:]
    /// For each backup some supplement holds files of, those supplements' positions.
    private var byOrigin: [BackupID: Set<Int>] = [:]

    /// A shelf without supplements.
    public init() {}

    /// The supplements in `storage` (listed as `objects`). A file two supplements hold is
    /// found in the newer one: it was written to replace the older.
    public init(storage: KeyedStorage, objects: [StoredObject]) {
        let named = objects.compactMap { object in SupplementNaming.parts(ofManifestName: object.name).map { (id: $0.id, name: object.name) } }
        for name in named.sorted(by: { ($0.id, $0.name) < ($1.id, $1.name) }).map(\.name) {
            do {
                let manifest = try SupplementShelf.readManifest(name, from: storage)
                guard let parts = SupplementNaming.parts(ofManifestName: name), parts.id == manifest.id,
                      manifest.archiveName == SupplementNaming.archiveName(host: parts.host, id: parts.id) else {
                    unreadable.append((name, "its name and its first line disagree"))
                    continue
                }
                add(manifest)
            } catch {
                unreadable.append((name, "\(error)"))
            }
        }
    }

    /// Reads and parses the supplement manifest `name`.
    static func readManifest(_ name: String, from storage: KeyedStorage) throws -> SupplementManifest {
        let source = try SidecarManifest.open(name, in: storage)
        defer { source.close() }
        return try SupplementManifest.parse(try SidecarManifest.decoding { try source.readAll(limit: ManifestSizeLimit.hardLimit) })
    }

    /// Adds a supplement (newer than those already on the shelf).
    mutating func add(_ manifest: SupplementManifest) {
        let position = supplements.count
        supplements.append(manifest)
        for (index, entry) in manifest.entries.enumerated() {
            guard let origin = entry.storedIn else { continue }
            held[SupplementManifest.HeldFile(origin: origin, path: PathKey(entry.path)), default: []].append((position, index))
            byOrigin[origin, default: []].insert(position)
        }
    }

    // MARK: Looking up

    /// True when there are no supplements (nor unreadable ones).
    public var isEmpty: Bool { supplements.isEmpty && unreadable.isEmpty }

    /// The newest supplement holding the file at `path` of backup `origin` with the SHA-256
    /// `sha256` (a kept manifest records it), and its entry there. Another supplement that
    /// says it holds the file with other content (planted, or damaged) is passed over.
    public func holding(_ origin: BackupID, path: [UInt8], sha256: String?) -> (supplement: SupplementManifest, entry: ManifestEntry)? {
        holders(origin, path: path, sha256: sha256).first
    }

    /// Every supplement holding the file at `path` of backup `origin` with the SHA-256
    /// `sha256`, newest first (more than one only after an interrupted prune, a copy, or
    /// objects planted by someone else).
    public func holders(_ origin: BackupID, path: [UInt8], sha256: String?) -> [(supplement: SupplementManifest, entry: ManifestEntry)] {
        guard let sha256, let places = held[SupplementManifest.HeldFile(origin: origin, path: PathKey(path))] else { return [] }
        return places.reversed().compactMap { place in
            let supplement = supplements[place.supplement]
            let entry = supplement.entries[place.entry]
            return entry.sha256 == sha256 ? (supplement, entry) : nil
        }
    }

    /// True when some supplement holds files of backup `origin`.
    public func holdsFiles(of origin: BackupID) -> Bool { byOrigin[origin] != nil }

    /// The supplements that hold files of any of `origins`, oldest first.
    public func supplements(holdingFilesOf origins: some Sequence<BackupID>) -> [SupplementManifest] {
        Set(origins.flatMap { byOrigin[$0] ?? [] }).sorted().map { supplements[$0] }
    }

    /// The supplement whose id is `id`.
    public func supplement(_ id: BackupID) -> SupplementManifest? {
        supplements.first { $0.id == id }
    }

    // MARK: Relocating

    /// `manifest` with each file whose holder is in `gone` pointed at the supplement that
    /// holds it (its `in`, `at` and `len` then name the supplement and the place there),
    /// when one holds it with the same SHA-256; other entries as they were. Returns the
    /// supplements it points at.
    public func relocating(_ manifest: inout Manifest, gone: Set<BackupID>) -> Set<BackupID> {
        guard !gone.isEmpty, !held.isEmpty else { return [] }
        var used = Set<BackupID>()
        let entries = manifest.entries
        var moves: [(position: Int, holder: BackupID, offset: Int64, length: Int64)] = []
        for position in entries.indices where entries.type(at: position) == .file {
            guard let holder = entries.storedIn(at: position), gone.contains(holder),
                  let found = holding(holder, path: entries.path(at: position), sha256: entries.sha256(at: position)),
                  let offset = found.entry.archiveOffset, let length = found.entry.archiveLength else { continue }
            moves.append((position, found.supplement.id, offset, length))
            used.insert(found.supplement.id)
        }
        for move in moves {
            manifest.entries.relocate(at: move.position, to: move.holder, offset: move.offset, length: move.length)
        }
        return used
    }
}
