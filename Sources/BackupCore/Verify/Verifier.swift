import Foundation
import KeepsakeArchive
import KeepsakeEncryption
import KeepsakeHashing
import KeepsakeModel
import KeepsakeSigning
import KeepsakeStorage
import KeepsakeSupport

/// What verifying one backup (or one archive file) found.
public struct VerifyReport: Sendable {
    /// The backup's id, when known.
    public var id: BackupID?
    /// The archive's name.
    public var name: String
    public var filesChecked: Int64 = 0
    public var bytesChecked: Int64 = 0
    /// Files whose content or description does not match, or that are missing.
    public var problems: [PathWarning] = []
    /// Problems with the archive as a whole (unreadable, truncated, wrong hash).
    public var archiveProblems: [String] = []
    /// True when there was no manifest to check against (a plain tarball).
    public var unverifiable = false
    /// True for an encrypted backup checked without a key: its stored bytes match the size
    /// and SHA-256 recorded when they were stored, but what they hold was not decrypted.
    public var contentsUnchecked = false
    /// Files of an incremental backup whose content is in earlier backups' archives. In a
    /// destination those archives are verified too; for a lone archive file they are not.
    public var filesInEarlierArchives: Int64 = 0
    /// The earlier backups this one relies on (all verified along with it in a destination).
    public var reliesOn: [BackupID] = []
    /// Where reading stopped at damage ("frame 3", or the entry being read), when it did.
    public var unreadableFrom: String?
    /// Entries of the manifest that could not be checked because reading stopped before
    /// them (they are not named one by one: they may well be intact).
    public var entriesUnchecked: Int64 = 0
    /// The backups it relies on that are damaged (its own archive may be intact).
    public var damagedEarlier: [BackupID] = []
    /// Whether its own manifest and archive are intact, before the backups it relies on
    /// were checked (nil when checking stopped before that: then it is not).
    var intactItself: Bool?

    /// Creates an empty report.
    public init(id: BackupID?, name: String) {
        self.id = id
        self.name = name
    }

    /// With a signature asked for (`Verifier.signatureCheck`): why the backup is not signed
    /// by that key, or was changed since (nil when it is signed and unchanged). Not damage:
    /// a backup can be intact and still not come from the host that holds the key.
    public var signatureProblem: String?

    /// True when nothing is wrong.
    public var isIntact: Bool { problems.isEmpty && archiveProblems.isEmpty && !unverifiable }
}

/// Proves archives intact: decompresses everything, checks every file's SHA-256 against
/// the manifest, every manifest entry's presence, and the archive's own SHA-256 and size.
public final class Verifier {
    // MARK: Dependencies

    private weak var events: EngineEventSink?
    private let cancellation: CancellationFlag
    private var lastProgress = Date.distantPast
    /// Reports of backups already verified in this run: an incremental chain's archives are
    /// read once however many backups rely on them.
    private var verified: [BackupID: VerifyReport] = [:]
    /// The destination's backups by id, listed once per run.
    private var catalogItems: [BackupID: BackupCatalog.Item]?
    /// The destination's supplements, read once a run when a backup relies on one gone.
    private var shelf: SupplementShelf?
    /// Each supplement checked this run: nil inside when whole, else what is wrong.
    private var supplementProblems: [BackupID: String?] = [:]
    /// `damageRecords`' object names, listed once per run.
    private var objectNames: Set<String>?
    /// Backups being verified further up the stack: one relied on again is a cycle (a
    /// manifest whose name and summary disagree can slip past the parser's check).
    private var inProgress = Set<BackupID>()
    /// What each verified backup's archive holds, so a chain's manifests are read once.
    private let heldFiles: HeldFilesMemo
    /// When set, every backup verified is also checked to be signed by this key (its
    /// report's `signatureProblem`).
    public var signatureCheck: SignatureCheck?
    /// The destination's objects as stored, listed once per run for the signature checks.
    private var signatureSizes: [String: Int64]?
    /// The destination the backups verified with `verify(_:in:)` are in, to note there which
    /// are damaged (see `DamageRecord`), under its lock; nil writes nothing. Reading never
    /// needs it: verify reads through a `KeyedStorage`, which cannot write.
    public var damageRecords: (any WritableStorage)?

    /// A verifier reporting progress to `events`.
    public convenience init(events: EngineEventSink?, cancellation: CancellationFlag) {
        self.init(events: events, cancellation: cancellation, heldFilesLimit: HeldFilesMemo.defaultLimit)
    }

    /// A verifier whose memo of what verified archives hold keeps at most `heldFilesLimit`
    /// files (tests use 0 to check the way taken without it).
    init(events: EngineEventSink?, cancellation: CancellationFlag, heldFilesLimit: Int) {
        self.events = events
        self.cancellation = cancellation
        heldFiles = HeldFilesMemo(limit: heldFilesLimit)
    }

    // MARK: Verifying

    /// Verifies a backup found by `BackupLocator`: in a destination with the archives it
    /// relies on; an archive file alone, against the manifest beside it or its own.
    public func verify(_ backup: LocatedBackup) throws -> VerifyReport {
        if !backup.isArchiveFile, let item = backup.item { return try verify(item, in: backup.storage) }
        guard let archiveName = backup.archiveName else {
            throw EngineError.manifestUnreadable(name: backup.item?.manifestName ?? backup.label, reason: "it does not name its archive")
        }
        var signatureProblem: String?
        if let signatureCheck {
            do {
                try backup.requireSignatures(signatureCheck, cancellation: cancellation)
            } catch let error as SigningError {
                signatureProblem = error.description
            }
        }
        let (hashing, content, inParts) = try Verifier.openForCheck(archiveName, in: backup.storage)
        defer { content.close() }
        var report = try verify(stored: hashing, content: content, inParts: inParts, name: backup.archiveLabel,
                                sidecar: backup.manifestBytes())
        report.signatureProblem = signatureProblem
        return report
    }

    /// Why `item` is not signed by `signatureCheck`'s key (nil when it is, unchanged). Its
    /// archive is not read here: its line must name the archive its summary records, which
    /// verify compares with the archive's bytes.
    private func signatureProblem(of item: BackupCatalog.Item, in storage: any ReadableStorage) -> String? {
        guard let signatureCheck else { return nil }
        guard let stem = BackupNaming.stem(of: item.manifestName), let facts = item.summary?.archive else {
            return SigningError.unsigned(backup: item.id.rawValue, destination: storage.location, signature: "signature").description
        }
        do {
            if signatureSizes == nil { signatureSizes = try SignatureCheck.sizes(in: storage) }
            try signatureCheck.check(stem: stem, label: item.id.rawValue, in: storage, sizes: signatureSizes ?? [:],
                                     reading: [item.manifestName, facts.name], archiveFacts: facts, cancellation: cancellation)
            return nil
        } catch let error as SigningError {
            return error.description
        } catch {
            return "its signature could not be checked: \(error)"
        }
    }

    /// Opens the archive `name` for a check: the bytes as stored are hashed, and an
    /// encrypted archive is decrypted above that, so one read checks both. `inParts` is the
    /// stored archive for reading in parts when its content is those bytes themselves (not
    /// encrypted): what reading around damage needs.
    private static func openForCheck(_ name: String, in storage: KeyedStorage) throws
        -> (stored: HashingSource, content: ByteSource, inParts: RandomAccessSource?) {
        let raw: RandomAccessSource
        do {
            raw = try storage.stored.open(name)
        } catch StorageError.notFound {
            throw EngineError.archiveMissing(name: name, backup: BackupNaming.stem(of: name) ?? name, destination: storage.location)
        }
        let hashing = HashingSource(source: raw)
        do {
            guard try storage.isEncrypted(name, raw) else { return (hashing, hashing, raw) }
            return (hashing, try storage.openStream(hashing, name: name), nil)
        } catch {
            raw.close()
            throw error
        }
    }

    /// For an encrypted backup: what is wrong with its summary in the clear, which list,
    /// prune and copy believe, against the encrypted manifest's own summary.
    private static func publicSummaryProblem(_ item: BackupCatalog.Item, manifest: Manifest, in storage: KeyedStorage) -> String? {
        guard let name = BackupNaming.publicSummaryName(forManifest: item.manifestName) else { return nil }
        guard let bytes = try? storage.stored.readObject(name, limit: 1 << 20) else {
            return "\(name), the summary in the clear, is missing"
        }
        // Byte for byte as written (from the same summary): a flip in a key that parsing
        // would ignore is damage too.
        let expected = manifest.summary.publicSummaryLine
        return bytes == expected ? nil : "\(name), the summary in the clear, is damaged: it differs from the encrypted manifest's"
    }

    /// True when `storage`'s keyring can open the encrypted backup `item` (a key was given).
    private static func canDecrypt(_ item: BackupCatalog.Item, in storage: KeyedStorage) -> Bool {
        guard BackupNaming.isEncrypted(item.manifestName) else { return true }
        return storage.keyring.mayOpen(item.summary?.encryption)
    }

    /// Verifies a backup in a destination against the manifest beside its archive.
    public func verify(_ item: BackupCatalog.Item, in storage: KeyedStorage) throws -> VerifyReport {
        if let known = verified[item.id] { return known }
        inProgress.insert(item.id)
        defer { inProgress.remove(item.id) }
        var report = try verifyUncached(item, in: storage)
        if !item.isMisnamed { report.signatureProblem = signatureProblem(of: item, in: storage.stored) }
        verified[item.id] = report
        noteDamage(of: item, itself: report.intactItself ?? report.isIntact, checkedWhole: !report.contentsUnchecked)
        return report
    }

    /// Records in `damageRecords` whether `item` itself is damaged (see `DamageRecord`), so
    /// that the next backup of its chain starts a new one; an intact one loses its record.
    /// Only a whole check takes a record back: without a key only the stored bytes of the
    /// archive are checked, not its manifest, which a record may be about. The write is made
    /// under the destination's lock (so never beside a prune removing the backup); when the
    /// lock is held elsewhere or the write fails, a caution says so, and the next verify
    /// tries again. Without `damageRecords` (a lone archive's folder) nothing is written.
    private func noteDamage(of item: BackupCatalog.Item, itself intact: Bool, checkedWhole: Bool) {
        guard let destination = damageRecords else { return }
        if objectNames == nil { objectNames = (try? destination.list()).map { Set($0.map(\.name)) } ?? [] }
        let recorded = DamageRecord.stored(for: item, names: objectNames ?? [], in: destination) != nil
        let marking: Bool
        if intact {
            guard recorded && checkedWhole else { return }
            marking = false
        } else {
            guard !recorded else { return }
            marking = true
        }
        do {
            let lock = try destination.acquireLock(.current(operation: "verify"))
            defer { lock.release() }
            if marking {
                try DamageRecord(id: item.id, found: Date(), foundBy: "verify").store(for: item, in: destination)
            } else {
                try DamageRecord.remove(for: item, in: destination)
            }
        } catch {
            events?.handle(.caution(marking
                ? "backup \(item.id) was found damaged, but that could not be noted in \(destination.location) (\(error)); "
                    + "until a verify notes it, the next backup of its chain may build on it"
                : "backup \(item.id) verified intact, but the note that it was damaged could not be removed from "
                    + "\(destination.location) (\(error)); the next backup of its chain starts a new chain all the same"))
        }
    }

    private func verifyUncached(_ item: BackupCatalog.Item, in storage: KeyedStorage) throws -> VerifyReport {
        var report = VerifyReport(id: item.id, name: item.manifestName)
        if item.isMisnamed {
            // Its objects are not what their names say: nothing of it is read as its own.
            report.archiveProblems.append("\(item.manifestName) is not backup \(item.id) as written: \(item.problem ?? "it is misnamed")")
            return report
        }
        guard Verifier.canDecrypt(item, in: storage) else { return try verifyStored(item, in: storage, report: report) }
        let manifest: Manifest
        let beside = ManifestFingerprint()
        do {
            // Parsed and fingerprinted as it is read: its text is never held whole.
            manifest = try SidecarManifest.load(item.manifestName, from: storage, observing: { beside.update($0) })
            beside.finish()
        } catch let error as EncryptionError {
            throw error
        } catch {
            report.archiveProblems.append(EngineError.manifestUnreadable(name: item.manifestName, reason: "\(error)").description)
            return report
        }
        guard let facts = manifest.summary.archive else {
            report.archiveProblems.append("the manifest \(item.manifestName) does not name its archive")
            return report
        }
        if let disagreement = BackupCatalog.disagreement(manifest.summary, manifestName: item.manifestName) {
            report.archiveProblems.append("\(item.manifestName) is not backup \(item.id) as written: \(disagreement)")
            return report
        }
        if let problem = Verifier.publicSummaryProblem(item, manifest: manifest, in: storage) {
            report.archiveProblems.append(problem)
        }
        report.name = facts.name
        let hashing: HashingSource
        let content: ByteSource
        let inParts: RandomAccessSource?
        do {
            (hashing, content, inParts) = try Verifier.openForCheck(facts.name, in: storage)
        } catch let error as EncryptionError {
            throw error
        } catch {
            report.archiveProblems.append("the archive \(facts.name) is missing or unreadable: \(error)")
            return report
        }
        defer { content.close() }
        try check(content, inParts: inParts, name: facts.name, expected: manifest, beside: beside, report: &report)
        compareWhole(hashing, facts: facts, name: facts.name, report: &report)
        report.intactItself = report.isIntact
        heldFiles.keep(item.id, manifest: manifest)
        try checkEarlierArchives(manifest, in: storage, report: &report)
        return report
    }

    /// An encrypted backup without a key: its archive's stored bytes against the size and
    /// SHA-256 its summary in the clear records, and the same for every backup it relies on.
    private func verifyStored(_ item: BackupCatalog.Item, in storage: KeyedStorage, report: VerifyReport) throws -> VerifyReport {
        var report = report
        report.contentsUnchecked = true
        guard let summary = item.summary, let facts = summary.archive else {
            report.archiveProblems.append(EngineError.manifestUnreadable(name: item.manifestName,
                                                                         reason: item.problem ?? "it does not name its archive").description)
            return report
        }
        report.name = facts.name
        do {
            let source = try storage.stored.open(facts.name)
            defer { source.close() }
            let hashing = HashingSource(source: source)
            compareWhole(hashing, facts: facts, name: facts.name, report: &report)
            report.bytesChecked = hashing.count
        } catch {
            report.archiveProblems.append("the archive \(facts.name) is missing or unreadable: \(error)")
        }
        report.intactItself = report.isIntact
        report.reliesOn = (summary.reliesOn ?? []).filter { $0 != item.id }
        if catalogItems == nil {
            catalogItems = Dictionary((try BackupCatalog(storage: storage).items()).map { ($0.id, $0) }, uniquingKeysWith: { $1 })
        }
        for holder in report.reliesOn {
            guard let earlier = catalogItems?[holder] else {
                report.archiveProblems.append("it relies on backup \(holder), and that backup is missing: \(DamageRecord.remedy)")
                continue
            }
            guard !inProgress.contains(holder) else {
                report.archiveProblems.append("it relies on backup \(holder), which relies on it in turn (a cycle)")
                continue
            }
            if !(try verify(earlier, in: storage)).isIntact {
                report.damagedEarlier.append(holder)
                report.archiveProblems.append("it relies on backup \(holder), and that backup is damaged: \(DamageRecord.remedy)")
            }
        }
        return report
    }

    /// Reads what is left of the archive and compares its size and SHA-256 with what was
    /// recorded when it was stored: this catches damage in places no entry covers.
    private func compareWhole(_ hashing: HashingSource, facts: BackupSummary.ArchiveFacts, name: String,
                              report: inout VerifyReport) {
        do {
            try hashing.drain()
            if hashing.count != facts.size {
                report.archiveProblems.append("\(name) is \(hashing.count) bytes but was stored as \(facts.size) bytes")
            } else if hashing.finalizeHex() != facts.sha256 {
                report.archiveProblems.append("\(name) does not match the SHA-256 recorded when it was stored")
            }
        } catch {
            report.archiveProblems.append("cannot read \(name) to its end: \(error)")
        }
    }

    /// For an incremental backup: every backup it takes unchanged files from must be
    /// present and intact, and must hold each of those files with the same SHA-256.
    private func checkEarlierArchives(_ manifest: Manifest, in storage: KeyedStorage, report: inout VerifyReport) throws {
        // Positions in the manifest, not copies of entries.
        var byHolder: [BackupID: [Int]] = [:]
        let entries = manifest.entries
        for position in entries.indices where entries.type(at: position) == .file {
            if let holder = entries.storedIn(at: position) { byHolder[holder, default: []].append(position) }
        }
        // Files stored by blocks, by each earlier backup that holds some of their blocks.
        var blocksByHolder: [BackupID: [Int]] = [:]
        for position in entries.positionsStoredByBlocks {
            for holder in entries.blocks(at: position)?.holders ?? [] { blocksByHolder[holder, default: []].append(position) }
        }
        report.reliesOn = Set(byHolder.keys).union(blocksByHolder.keys).sorted()
        var ownIndex: ManifestIndex?
        // The lines of the files stored by blocks in each earlier backup present that holds
        // some of their blocks (nil: its manifest could not be read; verifying it says so).
        var heldLines: [BackupID: [PathKey: ManifestEntry]?] = [:]
        let catalog = BackupCatalog(storage: storage)
        // Listed once per run: a long chain must not re-read every summary for every link.
        if catalogItems == nil { catalogItems = Dictionary((try catalog.items()).map { ($0.id, $0) }, uniquingKeysWith: { $1 }) }
        for holder in report.reliesOn {
            let positions = byHolder[holder] ?? []
            let blockPositions = blocksByHolder[holder] ?? []
            guard let item = catalogItems?[holder] else {
                // A backup prune let go: its files and blocks are in supplements, or they are lost.
                let supplements = try shelf ?? SupplementShelf(storage: storage, objects: storage.list())
                shelf = supplements
                if !blockPositions.isEmpty {
                    if supplements.holdsFiles(of: holder) {
                        try checkSupplementedBlocks(blockPositions, of: manifest, from: holder, shelf: supplements, in: storage,
                                                    report: &report)
                    } else {
                        report.archiveProblems.append("it relies on backup \(holder) for blocks of \(Verifier.files(blockPositions.count)), "
                            + "and that backup is missing: \(DamageRecord.remedy)")
                    }
                }
                guard !positions.isEmpty else { continue }
                if supplements.holdsFiles(of: holder) {
                    try checkSupplemented(positions, of: manifest, from: holder, shelf: supplements, in: storage, report: &report)
                    continue
                }
                report.archiveProblems.append("it relies on backup \(holder) for \(Verifier.files(positions.count)), and that backup is missing: \(DamageRecord.remedy)")
                continue
            }
            guard !inProgress.contains(holder) else {
                report.archiveProblems.append("it relies on backup \(holder), which relies on it in turn (a cycle): "
                    + "a manifest is damaged or forged")
                continue
            }
            let earlier = try verify(item, in: storage)
            if !earlier.isIntact {
                report.damagedEarlier.append(holder)
                report.archiveProblems.append("it relies on backup \(holder) for \(Verifier.files(positions.count + blockPositions.count)), "
                    + "and that backup is damaged: \(DamageRecord.remedy)")
            }
            if !blockPositions.isEmpty { heldLines[holder] = lines(blockPositions, heldBy: item, manifest: manifest, catalog: catalog) }
            guard !positions.isEmpty else { continue }
            if ownIndex == nil { ownIndex = manifest.index() }
            guard let index = ownIndex,
                  let heldAsRecorded = heldAsRecorded(positions, by: item, manifest: manifest, index: index, catalog: catalog)
            else { continue }
            for position in positions where heldAsRecorded[index.position(of: entries.path(at: position)) ?? position] != true {
                report.problems.append(PathWarning(kind: .damaged, path: PathBytes.display(entries.path(at: position)),
                                                   reason: "backup \(holder) does not hold this file as recorded"))
            }
        }
        checkGatheredBlocks(entries.positionsStoredByBlocks, of: manifest, heldLines: heldLines, report: &report)
    }

    /// Each file stored by blocks at `positions` of `manifest`: the digests of its blocks,
    /// gathered from the lines of the backups that hold them (`heldLines`) and from the
    /// supplements of those gone (`BlockDigestGathering`), must be the ones its line records.
    /// A file some of whose holders are missing, or whose manifest could not be read, is
    /// left out (that was said already).
    private func checkGatheredBlocks(_ positions: [Int], of manifest: Manifest, heldLines: [BackupID: [PathKey: ManifestEntry]?],
                                     report: inout VerifyReport) {
        let entries = manifest.entries
        for position in positions {
            guard let table = entries.blocks(at: position) else { continue }
            let path = entries.path(at: position)
            var holders: [BackupID: BlockDigestGathering.Holder] = [:]
            for holder in table.holders {
                if let lines = heldLines[holder] {
                    guard let lines else { break }
                    holders[holder] = .line(lines[PathKey(path)])
                } else if let shelf, catalogItems?[holder] == nil, shelf.holdsFiles(of: holder) {
                    holders[holder] = .gone(shelf.blockHolders(holder, path: path).map(\.blocks))
                } else {
                    break
                }
            }
            guard holders.count == table.holders.count else { continue }
            if case .failure(let gap) = BlockDigestGathering.gather(table, holders: holders) {
                report.problems.append(PathWarning(kind: .damaged, path: PathBytes.display(path), reason: gap.reason))
            }
        }
    }

    /// The files at `positions` of `manifest`, which lie in backup `holder`, gone: each must
    /// be in a supplement with the SHA-256 recorded, and each supplement used must be whole
    /// (read once a run).
    private func checkSupplemented(_ positions: [Int], of manifest: Manifest, from holder: BackupID, shelf: SupplementShelf,
                                   in storage: KeyedStorage, report: inout VerifyReport) throws {
        let entries = manifest.entries
        var damaged = Set<BackupID>()
        for position in positions {
            let path = entries.path(at: position)
            guard let found = shelf.holding(holder, path: path, sha256: entries.sha256(at: position)) else {
                report.problems.append(PathWarning(kind: .damaged, path: PathBytes.display(path),
                                                   reason: "backup \(holder) is gone and no supplement holds this file as recorded"))
                continue
            }
            if let problem = try supplementProblem(found.supplement, in: storage), damaged.insert(found.supplement.id).inserted {
                report.archiveProblems.append("the supplement \(found.supplement.archiveName), which holds files of backup \(holder) "
                    + "it relies on, is damaged (\(problem)): \(DamageRecord.remedy)")
            }
        }
    }

    /// The files stored by blocks at `positions` of `manifest`, some of whose blocks lie in
    /// backup `holder`, gone: each supplement that holds those blocks must be whole (read
    /// once a run). Whether they are the blocks recorded is `checkGatheredBlocks`'s.
    private func checkSupplementedBlocks(_ positions: [Int], of manifest: Manifest, from holder: BackupID, shelf: SupplementShelf,
                                         in storage: KeyedStorage, report: inout VerifyReport) throws {
        let entries = manifest.entries
        var damaged = Set<BackupID>()
        for position in positions {
            guard let table = entries.blocks(at: position) else { continue }
            let holders = shelf.blockHolders(holder, path: entries.path(at: position))
            let recorded = table.heldDigests
            var used = Set<BackupID>()
            for (block, source) in table.sourceOfEachBlock.enumerated() where table.sources[source].holder == holder {
                guard let line = BlockDigestGathering.supplementLine(holding: block, of: table, recorded: recorded[block],
                                                                     among: holders.map(\.blocks)),
                      let found = holders.first(where: { $0.blocks == line }) else { continue }
                if used.insert(found.supplement.id).inserted, let problem = try supplementProblem(found.supplement, in: storage),
                   damaged.insert(found.supplement.id).inserted {
                    report.archiveProblems.append("the supplement \(found.supplement.archiveName), which holds blocks of backup "
                        + "\(holder) it relies on, is damaged (\(problem)): \(DamageRecord.remedy)")
                }
            }
        }
    }

    /// What is wrong with the supplement `supplement`'s archive (nil when it is whole), read once a run.
    private func supplementProblem(_ supplement: SupplementManifest, in storage: KeyedStorage) throws -> String? {
        if let known = supplementProblems[supplement.id] { return known }
        let problem: String?
        do {
            try SupplementContent.checkArchive(of: supplement, in: storage, cancellation: cancellation)
            problem = nil
        } catch let error as Interruption {
            throw error
        } catch {
            problem = "\(error)"
        }
        supplementProblems[supplement.id] = .some(problem)
        return problem
    }

    /// Whether each file at `positions` of `manifest` (which relies on backup `holder` for
    /// them) is held there as recorded, by position (a later line of a path wins): from what
    /// verifying `holder` kept, else from its manifest read front to back against `index`,
    /// not held. Nil when that manifest cannot be read (verifying it said so).
    private func heldAsRecorded(_ positions: [Int], by holder: BackupCatalog.Item, manifest: Manifest, index: ManifestIndex,
                                catalog: BackupCatalog) -> [Bool?]? {
        let entries = manifest.entries
        var recorded = [Bool?](repeating: nil, count: entries.count)
        if let held = heldFiles.held(by: holder.id) {
            for position in positions {
                let key = PathKey(entries.path(at: position))
                guard let canonical = index.position(of: key.bytes[...]), entries.storedIn(at: canonical) == holder.id,
                      entries.type(at: canonical) == .file else { continue }
                recorded[canonical] = held[key].map { $0 == entries.sha256(at: canonical) } ?? false
            }
            return recorded
        }
        do {
            _ = try catalog.forEachEntry(of: holder) { held in
                guard let position = index.position(of: held.path[...]), entries.storedIn(at: position) == holder.id,
                      entries.type(at: position) == .file else { return }
                recorded[position] = held.type == .file && held.storedIn == nil && held.sha256 == entries.sha256(at: position)
            }
        } catch {
            return nil
        }
        return recorded
    }

    /// The lines of backup `holder`'s manifest for the files stored by blocks at `positions`
    /// of `manifest` (some of whose blocks lie in its archive); nil when its manifest cannot
    /// be read (verifying it said so).
    private func lines(_ positions: [Int], heldBy holder: BackupCatalog.Item, manifest: Manifest,
                       catalog: BackupCatalog) -> [PathKey: ManifestEntry]? {
        let entries = manifest.entries
        return try? catalog.entries(of: holder, at: Set(positions.map { PathKey(entries.path(at: $0)) }))
    }

    /// Verifies a lone archive file against its own manifest, or against the manifest
    /// beside it (`sidecar`, its raw bytes), including the archive's recorded size and SHA-256.
    public func verify(archive source: ByteSource, name: String, sidecar: [UInt8]?) throws -> VerifyReport {
        let hashing = HashingSource(source: source)
        return try verify(stored: hashing, content: hashing, inParts: source as? RandomAccessSource, name: name, sidecar: sidecar)
    }

    /// `verify(archive:…)` for an archive whose stored bytes (`stored`) and content
    /// (`content`, read above them: decrypted, or the same source) differ.
    private func verify(stored: HashingSource, content: ByteSource, inParts: RandomAccessSource?, name: String,
                        sidecar: [UInt8]?) throws -> VerifyReport {
        let manifest = sidecar.flatMap { try? Manifest.parse($0) }
        let beside = manifest == nil ? nil : sidecar.map(ManifestFingerprint.init(of:))
        var report = VerifyReport(id: manifest?.summary.id, name: name)
        try check(content, inParts: inParts, name: name, expected: manifest, beside: beside, report: &report)
        if let facts = manifest?.summary.archive {
            compareWhole(stored, facts: facts, name: name, report: &report)
        }
        return report
    }

    // MARK: Checking

    /// Reads the archive front to back. With `expected` known, each file is checked as it
    /// comes; otherwise digests are collected and checked against the archive's own
    /// manifest at the end. When damage stops the reading and the archive can be read in
    /// parts (`inParts`, see `checkAround`), the rest is checked around the damage.
    private func check(_ source: ByteSource, inParts: RandomAccessSource?, name: String, expected: Manifest?,
                       beside: ManifestFingerprint?, report: inout VerifyReport) throws {
        let index = expected?.index()
        var state = ArchiveReadState(positions: index?.entries.count ?? 0)
        // Kept outside the reader: damage may stop the reader from opening at all.
        var decoded: ByteSource?
        do {
            let input = try ArchiveReader.decoding(source, name: name)
            decoded = input
            let reader = try ArchiveReader(decoded: input, name: name, keepsakeTar: false, cancellation: cancellation)
            try readEntries(of: reader, name: name, expected: expected, index: index, state: &state, report: &report)
        } catch let error as ArchiveError {
            report.archiveProblems.append("\(error) (while reading \(state.current))")
            let frame = ArchiveReader.unreadableFrame(of: decoded)
            report.unreadableFrom = frame.map { "frame \($0)" } ?? state.current
            if let inParts {
                try checkAfterDamage(at: frame, of: inParts, name: name, index: index, state: &state, report: &report)
            }
        } catch let error as StorageError {
            report.archiveProblems.append("\(error) (while reading \(state.current))")
            report.unreadableFrom = state.current
        }

        if let expected, let index {
            judge(state, against: expected, index: index, beside: beside, name: name, report: &report)
        } else if let recovered = state.recovered {
            let entries = recovered.manifest.entries
            report.id = recovered.manifest.summary.id
            report.filesInEarlierArchives = Int64(entries.indices.count { !entries.hasEntryInOwnArchive(at: $0) && entries.type(at: $0) == .file })
            let absent = recovered.index.distinctPositions.filter { entries.hasEntryInOwnArchive(at: $0) && !recovered.seen[$0] }
                .map { entries[$0] }
            reportAbsent(absent, of: entries.indices.count(where: { entries.hasEntryInOwnArchive(at: $0) }), report: &report)
        } else if let innerManifest = state.innerManifest {
            judge(state, againstItsOwn: innerManifest, report: &report)
        } else {
            judgeWithoutManifest(state, name: name, report: &report)
        }
        if let manifest = state.innerManifest, let checksums = state.checksums,
           !ChecksumListCheck.matches(checksums, manifest: manifest) {
            state.checksumsMatch = false
        }
        if state.checksumsMatch == false {
            report.archiveProblems.append("the SHA256SUMS inside \(name) differs from its manifest")
        }
        report.problems.sort { $0.path < $1.path }
    }

    /// Reads every entry of `reader` to the end of the archive: the user's entries are
    /// checked (against `index` when the manifest beside is known, else their digests are
    /// kept), Keepsake's own are read into `state`.
    private func readEntries(of reader: ArchiveReader, name: String, expected: Manifest?, index: ManifestIndex?,
                             state: inout ArchiveReadState, report: inout VerifyReport) throws {
        while let header = try reader.nextHeader() {
            try cancellation.check()
            state.current = PathBytes.display(header.path)
            if let file = ArchiveLayout.fileOfBlocksEntry(header.path) {
                try checkBlocks(of: file, header: header, reader: reader, index: index, state: &state, report: &report)
                continue
            }
            if ArchiveLayout.isMetadataEntry(header.path) {
                try readOwnEntry(header, of: reader, name: name, expected: expected, state: &state, report: &report)
                continue
            }
            state.entriesSeen += 1
            let sha = try checkContent(header, reader: reader, report: &report)
            reportProgress(report, path: state.current)
            if let index {
                compare(header, sha: sha, index: index, seen: &state.seen, report: &report)
            } else {
                state.digests[PathKey(header.path)] = (sha, header)
            }
        }
        state.current = "the end of the archive"
        try reader.readToEnd()
    }

    /// Checks a block entry (the blocks of the file at `file` that this backup stores): with
    /// the manifest known, each block it holds must be one the file's line says is here,
    /// with the SHA-256 recorded, and every such block must be there. Without it, the entry
    /// is only noted (its blocks cannot be judged before the manifest inside is read).
    private func checkBlocks(of file: [UInt8], header: ArchiveEntryHeader, reader: ArchiveReader, index: ManifestIndex?,
                             state: inout ArchiveReadState, report: inout VerifyReport) throws {
        state.entriesSeen += 1
        guard let index else {
            state.blockEntries.insert(PathKey(file))
            return try reader.skipContent()
        }
        let shown = PathBytes.display(file)
        guard let position = index.position(of: file[...]), let table = index.entries.blocks(at: position),
              let here = table.sources.firstIndex(where: { $0.holder == nil }) else {
            report.problems.append(PathWarning(kind: .damaged, path: shown, reason: "the archive holds blocks of it that its "
                + "manifest line does not place here"))
            return try reader.skipContent()
        }
        state.seen[position] = true
        let entry = index.entries[position]
        let expected = Set(table.sourceOfEachBlock.enumerated().filter { $0.element == here }.map(\.offset))
        let check = BlockCheck(table: table, fileSize: entry.size)
        while let block = try reader.nextBlock() {
            try cancellation.check()
            check.add(block.bytes, at: block.offset)
            report.bytesChecked += Int64(block.bytes.count)
        }
        let found = check.finish()
        report.filesChecked += 1
        if let problem = found.problem ?? (found.matched == expected ? nil
            : "the archive holds \(found.matched.count) of its blocks, where its manifest line places \(expected.count) here") {
            report.problems.append(PathWarning(kind: .damaged, path: shown, reason: problem))
        }
    }

    /// Reads one of Keepsake's own entries: the marker folder, the checksum list, the manifest.
    private func readOwnEntry(_ header: ArchiveEntryHeader, of reader: ArchiveReader, name: String, expected: Manifest?,
                              state: inout ArchiveReadState, report: inout VerifyReport) throws {
        switch header.path {
        case ArchiveLayout.manifestEntryPath:
            // With the manifest beside it known, the copy inside is compared with it through
            // fingerprints, read a block at a time: holding and parsing it too would only
            // double the memory.
            if expected != nil {
                let fingerprint = ManifestFingerprint()
                while let block = try reader.nextBlock() {
                    try cancellation.check()
                    fingerprint.update(block.bytes)
                }
                fingerprint.finish()
                state.inside = fingerprint
                return
            }
            let bytes: [UInt8]
            do {
                bytes = try reader.readManifest(name: "the manifest inside \(name)")
            } catch let error as ManifestError {
                report.archiveProblems.append("\(error)")
                return
            }
            state.inside = ManifestFingerprint(of: bytes)
            do {
                state.innerManifest = try Manifest.parse(bytes)
            } catch {
                report.archiveProblems.append("the manifest inside \(name) cannot be read: \(error)")
            }
        case ArchiveLayout.checksumsEntryPath:
            // One line per file seen before it: more is not a list Keepsake wrote.
            let limit = ManifestSizeLimit.checksumsLimit(files: state.entriesSeen)
            guard let expected else {
                state.checksums = try reader.readContent(limit: limit)
                return
            }
            // Checked against the manifest as it is read, a block at a time.
            let list = ChecksumListCheck(manifest: expected)
            var length = 0
            while let block = try reader.nextBlock() {
                try cancellation.check()
                length += block.bytes.count
                if length > limit { break }
                list.update(block.bytes)
            }
            state.checksumsMatch = length <= limit && list.finish()
        default:
            state.sawMarker = true
            try reader.skipContent()
        }
    }

    /// After damage stopped the reading at `frame` (nil when it gave none): with the manifest
    /// beside known, the rest is checked around the damage. A lone archive damaged before its
    /// manifest gets the manifest found at its end, which checks what was read, and the rest
    /// is checked around the damage (`state.recovered`).
    private func checkAfterDamage(at frame: Int?, of inParts: RandomAccessSource, name: String, index: ManifestIndex?,
                                  state: inout ArchiveReadState, report: inout VerifyReport) throws {
        if let index {
            try checkAround(frame, of: inParts, name: name, index: index, seen: &state.seen, report: &report)
            return
        }
        guard state.innerManifest == nil,
              let found = try TailManifest.manifest(of: inParts, name: name, cancellation: cancellation) else { return }
        let foundIndex = found.index()
        var foundSeen = [Bool](repeating: false, count: found.entries.count)
        for (path, read) in state.digests {
            if let position = foundIndex.position(of: path.bytes[...]) { foundSeen[position] = true }
            compare(read.header, sha: read.sha256, with: foundIndex[path], insideOnly: true, report: &report)
        }
        state.digests = [:]
        try checkAround(frame, of: inParts, name: name, index: foundIndex, seen: &foundSeen, report: &report)
        state.recovered = (found, foundIndex, foundSeen)
    }

    /// Judges what was read against the manifest beside the archive: every entry it stores
    /// must have been seen, and the copy inside must be the same manifest.
    private func judge(_ state: ArchiveReadState, against expected: Manifest, index: ManifestIndex,
                       beside: ManifestFingerprint?, name: String, report: inout VerifyReport) {
        let entries = expected.entries
        report.filesInEarlierArchives = Int64(entries.indices.count {
            !entries.hasEntryInOwnArchive(at: $0) && entries.type(at: $0) == .file
        })
        // An earlier duplicate of a path counts as seen when its path was.
        let absent = entries.indices.filter {
            entries.hasEntryInOwnArchive(at: $0) && !(index.position(of: entries.path(at: $0)).map { state.seen[$0] } ?? false)
        }.map { entries[$0] }
        reportAbsent(absent, of: entries.indices.count(where: { entries.hasEntryInOwnArchive(at: $0) }), report: &report)
        if let inside = state.inside, let beside, !beside.matches(inside: inside) {
            report.archiveProblems.append("the manifest inside \(name) differs from the one beside it")
        } else if state.inside == nil && report.archiveProblems.isEmpty {
            report.archiveProblems.append("\(name) has no manifest inside; it is truncated")
        }
    }

    /// Judges a lone archive read to its own manifest: the digests kept are checked against it.
    private func judge(_ state: ArchiveReadState, againstItsOwn manifest: Manifest, report: inout VerifyReport) {
        report.id = manifest.summary.id
        let inner = manifest.index()
        for (path, found) in state.digests {
            compare(found.header, sha: found.sha256, with: inner[path], insideOnly: true, report: &report)
        }
        let entries = manifest.entries
        report.filesInEarlierArchives = Int64(entries.indices.count { !entries.hasEntryInOwnArchive(at: $0) && entries.type(at: $0) == .file })
        // A file stored by blocks counts as present when its block entry was met (its
        // blocks are checked only against a manifest known before reading).
        let absent = entries.indices.filter { position in
            let key = PathKey(entries.path(at: position))
            return entries.hasEntryInOwnArchive(at: position) && state.digests[key] == nil && !state.blockEntries.contains(key)
        }.map { entries[$0] }
        reportAbsent(absent, of: entries.indices.count(where: { entries.hasEntryInOwnArchive(at: $0) }), report: &report)
    }

    /// Judges an archive read without any manifest: damaged or truncated when it is a
    /// Keepsake archive (or reading stopped), otherwise a plain tarball that cannot be verified.
    private func judgeWithoutManifest(_ state: ArchiveReadState, name: String, report: inout VerifyReport) {
        if let from = report.unreadableFrom {
            // No manifest was reached (Keepsake writes it last): what follows cannot be counted.
            let manifest = state.sawMarker ? ", and the manifest at the end," : ""
            report.archiveProblems.append(state.entriesSeen == 0 ? "unreadable from \(from): no entry could be checked"
                : "unreadable from \(from): the entries from there on\(manifest) could not be checked")
        } else if state.sawMarker {
            if report.archiveProblems.isEmpty {
                report.archiveProblems.append("\(name) is a Keepsake archive but ends before its manifest: it is truncated or damaged")
            }
        } else if report.archiveProblems.isEmpty {
            report.unverifiable = true
        }
    }

    /// A file's content hashed (counted in `report`), or the content skipped; the SHA-256
    /// of a file, nil for other entries.
    private func checkContent(_ header: ArchiveEntryHeader, reader: ArchiveReader, report: inout VerifyReport) throws -> String? {
        guard header.type == .file else {
            try reader.skipContent()
            return nil
        }
        let content = try ManifestCheck.hashContent(of: reader, declaredSize: header.size, cancellation: cancellation)
        report.filesChecked += 1
        report.bytesChecked += content.size
        return content.sha256
    }

    /// Compares an entry met in the archive with its line in the manifest beside it, and
    /// notes its position as seen.
    private func compare(_ header: ArchiveEntryHeader, sha: String?, index: ManifestIndex, seen: inout [Bool],
                         report: inout VerifyReport) {
        let position = index.position(of: header.path[...])
        if let position { seen[position] = true }
        compare(header, sha: sha, with: position.map { index.entries[$0] }, insideOnly: false, report: &report)
    }

    /// After damage stopped the reading at `frame`: the archive's entries not yet seen are
    /// checked from the frames that hold them (the seek table and the manifest's `at`/`len`
    /// say which), around every damaged frame met on the way; an entry that lies in a
    /// damaged frame is checked out of what that frame still decodes (`FrameSalvage`), and
    /// named when it cannot be. Does nothing when the archive has no seek table or the
    /// manifest does not place every such entry (then they are counted unchecked, as before).
    private func checkAround(_ frame: Int?, of source: RandomAccessSource, name: String, index: ManifestIndex,
                             seen: inout [Bool], report: inout VerifyReport) throws {
        let entries = index.entries
        let own = ManifestIndex(entries, positions: index.distinctPositions.filter { entries.storedIn(at: $0) == nil })
        guard var damaged = DamagedFrames(source: source) else { return }
        let salvage = try FrameSalvage(source: source, table: damaged.table)
        // Damage that gave no frame (a frame's magic number gone): where the first entry not
        // yet seen begins.
        var unreadable = frame ?? damaged.firstFrame(of: own, unless: { seen[$0] })
        // Every round adds a frame to `damaged`, so this ends within the table's length.
        while let frame = unreadable, damaged.add(frame) {
            guard let (lost, rest) = damaged.split(own, unless: { seen[$0] }) else { return }
            for position in lost {
                // Checked out of what the damaged frame still decodes, when it holds the entry.
                if let location = entries.location(at: position),
                   let (reader, header) = salvage.entry(location, name: name, cancellation: cancellation),
                   ManifestCheck.salvaged(header, agreesWith: entries[position]) {
                    do {
                        let sha = try checkContent(header, reader: reader, report: &report)
                        compare(header, sha: sha, index: index, seen: &seen, report: &report)
                        continue
                    } catch is ArchiveError {
                        // Its content ends early: named below.
                    }
                }
                seen[position] = true
                let frames = damaged.description(of: entries.location(at: position) ?? 0..<0)
                report.problems.append(PathWarning(kind: .damaged, path: PathBytes.display(entries.path(at: position)),
                                                   reason: "it lies in a damaged part of the archive (\(frames))"))
            }
            guard !rest.isEmpty else { return }
            // Not closed: closing it would close `source`, which the caller still reads.
            let around = RangedZstdSource(source: source, table: damaged.table, ranges: rest.compactMap(entries.location(at:)),
                                          name: name, workers: DecodedArchiveSource.workers)
            unreadable = nil
            do {
                let reader = try ArchiveReader(source: around, name: name, keepsakeTar: true, cancellation: cancellation)
                while let header = try reader.nextHeader() {
                    try cancellation.check()
                    guard !ArchiveLayout.isMetadataEntry(header.path) else {
                        try reader.skipContent()
                        continue
                    }
                    let sha = try checkContent(header, reader: reader, report: &report)
                    reportProgress(report, path: PathBytes.display(header.path))
                    compare(header, sha: sha, index: index, seen: &seen, report: &report)
                }
            } catch let error as ArchiveError {
                report.archiveProblems.append("\(error)")
                unreadable = around.unreadableFrame ?? damaged.firstFrame(of: own, unless: { seen[$0] })
            } catch let error as StorageError {
                report.archiveProblems.append("\(error)")
            }
        }
    }

    /// Entries of the manifest the archive was not seen to hold: each named as missing when
    /// the archive was read to its end; counted once when reading stopped at damage before them.
    private func reportAbsent(_ absent: [ManifestEntry], of total: Int, report: inout VerifyReport) {
        guard let from = report.unreadableFrom else {
            for entry in absent {
                report.problems.append(PathWarning(kind: .damaged, path: entry.displayPath, reason: "missing from the archive"))
            }
            return
        }
        report.entriesUnchecked = Int64(absent.count)
        guard !absent.isEmpty else { return }
        report.archiveProblems.append("unreadable from \(from): \(absent.count) of \(total) \(total == 1 ? "entry" : "entries") could not be checked")
    }

    /// "1 file", "17 files".
    static func files(_ count: Int) -> String { count == 1 ? "1 file" : "\(count) files" }

    /// Checks one entry against its manifest line; `insideOnly` when that line comes from the
    /// manifest inside the archive (no manifest beside it).
    private func compare(_ header: ArchiveEntryHeader, sha: String?, with entry: ManifestEntry?, insideOnly: Bool,
                         report: inout VerifyReport) {
        if let problem = ManifestCheck.mismatch(header, entry) {
            report.problems.append(PathWarning(kind: .damaged, path: PathBytes.display(header.path),
                                               reason: problem.replacingOccurrences(of: "; not restored", with: "")))
        } else if header.type == .file, let expected = entry?.sha256, expected != sha {
            report.problems.append(PathWarning(kind: .damaged, path: PathBytes.display(header.path),
                                               reason: "content does not match its SHA-256 in the manifest"))
        } else if let entry, let differences = RecordedAttributes(entry).differences(from: RecordedAttributes(header)) {
            // The manifest beside the archive is under zstd's checksums, so the header is the
            // damaged one (a damaged pax header is skipped by tar readers: times lose their
            // nanoseconds); the archive's own manifest is no surer than its headers.
            let reason = insideOnly ? RecordedAttributes.disagreement(differences)
                : "its tar header is damaged (\(differences) not as in the manifest)"
            report.problems.append(PathWarning(kind: .damaged, path: PathBytes.display(header.path), reason: reason))
        }
    }

    private func reportProgress(_ report: VerifyReport, path: String) {
        guard let events else { return }
        let now = Date()
        guard now.timeIntervalSince(lastProgress) >= 0.1 else { return }
        lastProgress = now
        events.handle(.progress(ProgressSnapshot(entriesDone: report.filesChecked, filesDone: report.filesChecked, bytesDone: report.bytesChecked,
                                                 totalBytes: nil, currentPath: path)))
    }
}
