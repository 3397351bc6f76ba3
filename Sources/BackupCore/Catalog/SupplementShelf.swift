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
    /// Encrypted supplements no key given here opens, as their summaries in the clear say
    /// (see `SupplementSummary`): what they hold is known by backup, not by file.
    public private(set) var closed: [SupplementSummary] = []
    /// Where each held file is: the supplement's position in `supplements` and the entry's,
    /// oldest supplement first.
    private var held: [SupplementManifest.HeldFile: [(supplement: Int, entry: Int)]] = [:]
    /// Where held blocks are (`HeldBlocks`), by the backup and path they are of: the
    /// supplement's position and the line's, oldest supplement first.
    private var heldBlocks: [SupplementManifest.HeldFile: [(supplement: Int, line: Int)]] = [:]
    /// For each backup some supplement holds files of, those supplements' positions.
    private var byOrigin: [BackupID: Set<Int>] = [:]

    /// A shelf without supplements.
    public init() {}

    /// The supplements in `storage` (listed as `objects`). A file two supplements hold is
    /// found in the newer one: it was written to replace the older. An encrypted one that
    /// none of `storage`'s keys opens is `closed`, known from its summary in the clear.
    public init(storage: KeyedStorage, objects: [StoredObject]) {
        let named = objects.compactMap { object in SupplementNaming.parts(ofManifestName: object.name).map { (id: $0.id, name: object.name) } }
        for name in named.sorted(by: { ($0.id, $0.name) < ($1.id, $1.name) }).map(\.name) {
            guard let parts = SupplementNaming.parts(ofManifestName: name) else { continue }
            let encrypted = BackupNaming.isEncrypted(name)
            do {
                let manifest = try SupplementShelf.readManifest(name, from: storage)
                guard parts.id == manifest.id, parts.host == manifest.host, (manifest.encryption != nil) == encrypted,
                      manifest.archiveName == SupplementNaming.archiveName(host: parts.host, id: parts.id, encrypted: encrypted) else {
                    unreadable.append((name, "its name and its first line disagree"))
                    continue
                }
                add(manifest)
            } catch let keyProblem as EncryptionError where encrypted {
                // No key given opens it (a header that a key it names fails to open is damage,
                // told by `KeyedStorage`, and lands below).
                do {
                    closed.append(try SupplementShelf.readSummary(host: parts.host, id: parts.id, from: storage.stored))
                } catch {
                    unreadable.append((name, "\(keyProblem); its summary in the clear cannot be read either (\(error))"))
                }
            } catch {
                unreadable.append((name, "\(error)"))
            }
        }
    }

    /// Reads and parses the summary in the clear of the encrypted supplement `id` of `host`,
    /// which must name it.
    static func readSummary(host: String, id: BackupID, from storage: any ReadableStorage) throws -> SupplementSummary {
        let name = SupplementNaming.summaryName(host: host, id: id)
        let summary = try SupplementSummary.parse(try storage.readObject(name, limit: ManifestSizeLimit.hardLimit))
        guard summary.id == id, summary.host == host,
              summary.archiveName == SupplementNaming.archiveName(host: host, id: id, encrypted: true) else {
            throw ManifestError.notAManifest(reason: "\(name) names another supplement")
        }
        return summary
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
        for (line, blocks) in manifest.blocks.enumerated() {
            heldBlocks[SupplementManifest.HeldFile(origin: blocks.origin, path: PathKey(blocks.path)), default: []].append((position, line))
            byOrigin[blocks.origin, default: []].insert(position)
        }
    }

    // MARK: Looking up

    /// True when there are no supplements (nor unreadable or closed ones).
    public var isEmpty: Bool { supplements.isEmpty && unreadable.isEmpty && closed.isEmpty }

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

    /// Every supplement holding blocks of backup `origin`'s version of the file at `path`,
    /// with the line that says which, newest first.
    public func blockHolders(_ origin: BackupID, path: [UInt8]) -> [(supplement: SupplementManifest, blocks: HeldBlocks)] {
        (heldBlocks[SupplementManifest.HeldFile(origin: origin, path: PathKey(path))] ?? []).reversed().map { place in
            (supplements[place.supplement], supplements[place.supplement].blocks[place.line])
        }
    }

    /// True when some supplement (a closed one by its summary) holds files of backup `origin`.
    public func holdsFiles(of origin: BackupID) -> Bool {
        byOrigin[origin] != nil || closed.contains { $0.holds.contains(origin) }
    }

    /// The summaries of the supplements, closed ones too, that hold files of any of
    /// `origins`, oldest first: what a chain reads, for those that only check it is there.
    public func summaries(holdingFilesOf origins: some Sequence<BackupID>) -> [SupplementSummary] {
        let wanted = Set(origins)
        let open = supplements(holdingFilesOf: wanted).map(\.summary)
        let others = closed.filter { !$0.holds.isDisjoint(with: wanted) }
        return (open + others).sorted { $0.id < $1.id }
    }

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
    /// when one holds it with the same SHA-256; and each block of a file stored by blocks
    /// whose holder is in `gone` pointed at a supplement holding it with the same digest
    /// (`relocatingBlocks`). Other entries and blocks as they were. When several say they
    /// hold a file or a block, `choosing` picks among them (newest first; by default the
    /// newest). Returns the supplements it points at.
    public func relocating(_ manifest: inout Manifest, gone: Set<BackupID>,
                           choosing: ([SupplementManifest]) -> Int = { _ in 0 }) -> Set<BackupID> {
        guard !gone.isEmpty, !held.isEmpty || !heldBlocks.isEmpty else { return [] }
        var used = Set<BackupID>()
        let entries = manifest.entries
        var moves: [(position: Int, holder: BackupID, offset: Int64, length: Int64)] = []
        for position in entries.indices where entries.type(at: position) == .file {
            guard let holder = entries.storedIn(at: position), gone.contains(holder) else { continue }
            let candidates = holders(holder, path: entries.path(at: position), sha256: entries.sha256(at: position))
            guard !candidates.isEmpty else { continue }
            let chosen = candidates.count == 1 ? 0 : choosing(candidates.map(\.supplement))
            let found = candidates[candidates.indices.contains(chosen) ? chosen : 0]
            guard let offset = found.entry.archiveOffset, let length = found.entry.archiveLength else { continue }
            moves.append((position, found.supplement.id, offset, length))
            used.insert(found.supplement.id)
        }
        for move in moves {
            manifest.entries.relocate(at: move.position, to: move.holder, offset: move.offset, length: move.length)
        }
        for position in manifest.entries.positionsStoredByBlocks {
            guard let table = manifest.entries.blocks(at: position), !table.holders.isDisjoint(with: gone),
                  let moved = relocatingBlocks(of: table, path: manifest.entries.path(at: position), gone: gone, choosing: choosing)
            else { continue }
            manifest.entries.replaceBlocks(at: position, with: moved)
            used.formUnion(moved.sources.compactMap { $0.origin == nil ? nil : $0.holder })
        }
        return used
    }

    /// `table` (of the file at `path`) with each block whose holder is in `gone` taken from a
    /// supplement that holds it with the same digest (a source of its own per supplement
    /// line, `origin` naming its entry); nil when no block moves. A block no supplement
    /// holds keeps its source: a restore names that backup's archive as missing.
    private func relocatingBlocks(of table: BlockTable, path: [UInt8], gone: Set<BackupID>,
                                  choosing: ([SupplementManifest]) -> Int) -> BlockTable? {
        struct Place: Hashable {
            var original: Int
            var supplement: BackupID?
            var origin: BackupID?
        }
        var placement = BlockTable.Placement<Place>()
        var holdersOf: [Int: [(supplement: SupplementManifest, blocks: HeldBlocks)]] = [:]
        var moved = false
        // A table stored as changes holds no digest of a block held elsewhere: the
        // supplement that holds that block of that backup's version stands in (what it puts
        // together is checked against the file's SHA-256).
        let digests = table.heldDigests
        for (block, original) in table.sourceOfEachBlock.enumerated() {
            var place = Place(original: original, supplement: nil, origin: nil)
            var source = table.sources[original]
            if let holder = source.holder, gone.contains(holder) {
                if holdersOf[original] == nil { holdersOf[original] = blockHolders(holder, path: path) }
                let candidates = (holdersOf[original] ?? []).filter {
                    guard $0.blocks.blockSize == table.blockSize, let held = $0.blocks.digest(of: block) else { return false }
                    return digests[block].map(held.elementsEqual) ?? true
                }
                if !candidates.isEmpty {
                    let chosen = candidates.count == 1 ? 0 : choosing(candidates.map(\.supplement))
                    let found = candidates[candidates.indices.contains(chosen) ? chosen : 0]
                    // One line per backup and path in a supplement: the two name it.
                    place = Place(original: -1, supplement: found.supplement.id, origin: found.blocks.origin)
                    source = BlockTable.Source(holder: found.supplement.id, whole: false, archiveOffset: found.blocks.archiveOffset,
                                               archiveLength: found.blocks.archiveLength, origin: found.blocks.origin)
                    moved = true
                }
            }
            placement.append(place, source: source)
        }
        // The own archive keeps its blocks (only a gone holder's move), so the digests held stay the same.
        return moved ? BlockTable(blockSize: table.blockSize, digests: table.digests, sources: placement.sources,
                                  runs: placement.runs, everyDigestSHA256: table.everyDigestSHA256) : nil
    }
}
