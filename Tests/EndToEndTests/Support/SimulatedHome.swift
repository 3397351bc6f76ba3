import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small home folder that changes every night the way real ones do, and the test's own
/// record of what it holds. The record is kept independently of Keepsake: a file's content
/// is `Fixtures.pseudoRandomBytes(count: size, seed: seed)` (a prefix of one endless stream,
/// so a file that grows by appending keeps its seed), so a night's whole tree is a small
/// value that can be kept for every night and compared with any restore byte for byte.
struct SimulatedHome {
    // MARK: Types

    /// One thing in the tree, as the record holds it.
    enum Node: Equatable {
        case file(seed: UInt64, size: Int, mode: mode_t)
        case directory(mode: mode_t)
        case symlink(target: String)
    }

    /// The tree on one night: relative path → node (folders included, the root not).
    typealias Snapshot = [String: Node]

    /// The record lost track of something it always holds (a fault in this fixture).
    struct BrokenRecord: Error, CustomStringConvertible {
        let description: String
    }

    // MARK: State

    /// The folder on disk (absolute).
    let root: String
    /// What it holds now.
    private(set) var nodes: Snapshot = [:]
    /// What changed on the last night, for failure messages.
    private(set) var lastChanges: [String] = []
    private var random: SeededGenerator
    private var nextSeed: UInt64 = 1_000
    private var serial = 0

    /// The mailbox that grows every night (issue 34's "big file appended to").
    static let mailbox = "mail/inbox.mbox"
    /// Its size on the first night; compacted, it is three quarters of it.
    private let mailboxSize: Int

    // MARK: Life

    /// Makes the first night's tree at `root` (created), from `seed`, its mailbox
    /// `mailboxSize` bytes (1 MiB and more gets a block table: see `BlockTable.threshold`).
    init(root: String, seed: UInt64, mailboxSize: Int = 64 * 1024) throws {
        self.root = root
        self.mailboxSize = mailboxSize
        random = SeededGenerator(seed: seed)
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(root))
        for folder in ["docs", "docs/letters", "photos", "projects", "projects/site", "projects/site/css", "mail", "notes"] {
            try makeFolder(folder)
        }
        for index in 0..<40 {
            let folder = ["docs", "docs/letters", "photos", "projects/site", "projects/site/css", "notes"][index % 6]
            try writeNewFile(folder + "/file-\(index).dat", size: random.below(6_000), mode: 0o644)
        }
        try writeNewFile(SimulatedHome.mailbox, size: mailboxSize, mode: 0o600)
        try makeLink("notes/latest", target: "file-5.dat")
        try makeFolder("empty")
    }

    // MARK: A night

    /// Changes the tree as a day of use would: files added, edited, deleted and renamed, the
    /// mailbox appended to, a file saved by write-then-rename, a mode changed; now and then
    /// a folder moved or a symlink repointed; one day in four, only mail.
    mutating func liveADay(_ night: Int) throws {
        lastChanges = []
        // A quiet day (a weekend away): only mail arrives. That night's archive then holds
        // nothing the next night still needs, so prune lets it go inside a chain.
        if random.below(4) == 0 {
            try appendToMailbox(bytes: 1_024 + random.below(6_000))
            lastChanges.append("a quiet day: mail only")
            return
        }
        for _ in 0..<random.below(4) { try add() }
        for _ in 0..<random.below(4) { try edit() }
        // About as many files go as come: the tree stays near its first size.
        for _ in 0..<random.below(4) { try delete() }
        if random.below(3) == 0 { try rename() }
        // Mail arrives every night; now and then old mail is archived away.
        if night % 61 == 60 { try compactMailbox() } else { try appendToMailbox(bytes: 1_024 + random.below(6_000)) }
        try saveByRename()
        if random.below(4) == 0 { try changeMode() }
        if night % 9 == 4 { try moveFolder() }
        if night % 11 == 7 { try repointLink() }
    }

    // MARK: Changes

    private mutating func add() throws {
        let folders = nodes.filter { if case .directory = $0.value { return true } else { return false } }.keys.sorted()
        let folder = folders[random.below(folders.count)]
        serial += 1
        try writeNewFile(folder + "/new-\(serial).dat", size: random.below(8_000), mode: 0o644)
    }

    private mutating func edit() throws {
        guard let path = randomFile(), case .file(_, _, let mode) = nodes[path] else { return }
        // An editor that writes in place: same inode, new content and size.
        try write(path, seed: takeSeed(), size: random.below(8_000), mode: mode, replacing: false)
        lastChanges.append("edited \(path)")
    }

    private mutating func delete() throws {
        guard nodes.count > 40, let path = randomFile() else { return }
        guard unlink(root + "/" + path) == 0 else { throw RawFileSystem.Failure("unlink", RawFileSystem.bytes(path)) }
        nodes[path] = nil
        lastChanges.append("deleted \(path)")
    }

    private mutating func rename() throws {
        guard let path = randomFile() else { return }
        serial += 1
        let folder = path.split(separator: "/").dropLast().joined(separator: "/")
        let renamed = folder + "/renamed-\(serial).dat"
        try move(path, to: renamed)
        lastChanges.append("renamed \(path) to \(renamed)")
    }

    private mutating func appendToMailbox(bytes: Int) throws {
        guard case .file(let seed, let size, let mode) = nodes[SimulatedHome.mailbox] else {
            throw BrokenRecord(description: "the record of \(root) has no \(SimulatedHome.mailbox)")
        }
        let all = Fixtures.pseudoRandomBytes(count: size + bytes, seed: seed)
        let path = RawFileSystem.bytes(root + "/" + SimulatedHome.mailbox)
        let fd = RawFileSystem.withCPath(path) { open($0, O_WRONLY | O_APPEND | O_CLOEXEC) }
        guard fd >= 0 else { throw RawFileSystem.Failure("open", path) }
        defer { close(fd) }
        try RawFileSystem.writeAll(fd, Array(all[size...]), at: size, path: path)
        nodes[SimulatedHome.mailbox] = .file(seed: seed, size: size + bytes, mode: mode)
    }

    /// The mailbox rewritten smaller (old mail moved out): a new content, a new inode.
    private mutating func compactMailbox() throws {
        guard case .file(_, _, let mode) = nodes[SimulatedHome.mailbox] else {
            throw BrokenRecord(description: "the record of \(root) has no \(SimulatedHome.mailbox)")
        }
        try write(SimulatedHome.mailbox, seed: takeSeed(), size: mailboxSize * 3 / 4, mode: mode, replacing: true)
        lastChanges.append("compacted \(SimulatedHome.mailbox)")
    }

    /// A save by write-then-rename whose rename the caller makes later, while a backup
    /// reads: a file chosen at random is edited in place (so that the backup reads it),
    /// then its next version is written to `temporary` (outside the tree, on its file
    /// system) and recorded as the tree's; returns the file and what it holds until the
    /// rename (nil when there is no file to save).
    mutating func stageSaveByRename(temporary: String) throws -> (path: String, before: Node)? {
        guard let path = randomFile(), case .file(_, _, let mode)? = nodes[path] else { return nil }
        try write(path, seed: takeSeed(), size: 1 + random.below(8_000), mode: mode, replacing: false)
        guard let before = nodes[path] else { return nil }
        let seed = takeSeed()
        let size = random.below(8_000)
        try RawFileSystem.writeFile(RawFileSystem.bytes(temporary), contents: Fixtures.pseudoRandomBytes(count: size, seed: seed),
                                    mode: mode)
        nodes[path] = .file(seed: seed, size: size, mode: mode)
        lastChanges.append("saved \(path) by rename while the run read")
        return (path, before)
    }

    /// The rename of a save staged by `stageSaveByRename`.
    func finishSave(_ path: String, from temporary: String) throws {
        try SimulatedHome.rename(RawFileSystem.bytes(temporary), to: RawFileSystem.bytes(root + "/" + path))
    }

    /// A save the way many programs do it: a temporary file, then a rename over the old one.
    private mutating func saveByRename() throws {
        guard let path = randomFile(), case .file(_, _, let mode) = nodes[path] else { return }
        try write(path, seed: takeSeed(), size: random.below(8_000), mode: mode, replacing: true)
        lastChanges.append("saved \(path) by rename")
    }

    private mutating func changeMode() throws {
        guard let path = randomFile(), case .file(let seed, let size, let mode) = nodes[path] else { return }
        let changed: mode_t = mode == 0o644 ? 0o600 : 0o644
        try RawFileSystem.setMode(RawFileSystem.bytes(root + "/" + path), changed)
        nodes[path] = .file(seed: seed, size: size, mode: changed)
        lastChanges.append("chmod \(String(changed, radix: 8)) \(path)")
    }

    /// Moves a whole folder (with all it holds) to a new name.
    private mutating func moveFolder() throws {
        let candidates = nodes.keys.filter { $0.hasPrefix("projects/") && !$0.dropFirst(9).contains("/")
            && { if case .directory = nodes[$0] { return true } else { return false } }($0) }.sorted()
        guard let folder = candidates.first else { return }
        serial += 1
        let moved = "projects/moved-\(serial)"
        try move(folder, to: moved)
        lastChanges.append("moved folder \(folder) to \(moved)")
    }

    private mutating func repointLink() throws {
        let link = "notes/latest"
        guard unlink(root + "/" + link) == 0 else { throw RawFileSystem.Failure("unlink", RawFileSystem.bytes(link)) }
        serial += 1
        try makeLink(link, target: "file-\(serial).dat")
        lastChanges.append("repointed \(link)")
    }

    // MARK: Writing

    private mutating func writeNewFile(_ path: String, size: Int, mode: mode_t) throws {
        try write(path, seed: takeSeed(), size: size, mode: mode, replacing: false)
        lastChanges.append("added \(path)")
    }

    /// Writes a file's content and records it. `replacing` writes a temporary file beside it
    /// and renames it over the path (a new inode); otherwise the file is rewritten in place.
    private mutating func write(_ path: String, seed: UInt64, size: Int, mode: mode_t, replacing: Bool) throws {
        let content = Fixtures.pseudoRandomBytes(count: size, seed: seed)
        let target = RawFileSystem.bytes(root + "/" + path)
        if replacing {
            let temporary = RawFileSystem.bytes(root + "/" + path + ".tmp-save")
            try RawFileSystem.writeFile(temporary, contents: content, mode: mode)
            try SimulatedHome.rename(temporary, to: target)
        } else {
            // O_TRUNC on the existing file: the same inode, as an editor writing in place.
            try RawFileSystem.writeFile(target, contents: content, mode: mode)
        }
        nodes[path] = .file(seed: seed, size: size, mode: mode)
    }

    private mutating func makeFolder(_ path: String) throws {
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(root + "/" + path))
        try RawFileSystem.setMode(RawFileSystem.bytes(root + "/" + path), 0o755)
        nodes[path] = .directory(mode: 0o755)
    }

    private mutating func makeLink(_ path: String, target: String) throws {
        try RawFileSystem.makeSymlink(RawFileSystem.bytes(root + "/" + path), target: RawFileSystem.bytes(target))
        nodes[path] = .symlink(target: target)
    }

    /// Renames `path` (a file or a folder with everything below it) and its record.
    private mutating func move(_ path: String, to destination: String) throws {
        try SimulatedHome.rename(RawFileSystem.bytes(root + "/" + path), to: RawFileSystem.bytes(root + "/" + destination))
        for key in nodes.keys.sorted() where key == path || key.hasPrefix(path + "/") {
            nodes[destination + key.dropFirst(path.count)] = nodes.removeValue(forKey: key)
        }
    }

    /// rename(2), or a failure naming `from`.
    private static func rename(_ from: [UInt8], to destination: [UInt8]) throws {
        let renamed = RawFileSystem.withCPath(from) { old in RawFileSystem.withCPath(destination) { Glibc.rename(old, $0) } }
        guard renamed == 0 else { throw RawFileSystem.Failure("rename", from) }
    }

    // MARK: Choosing

    /// A regular file other than the mailbox, chosen at random, or nil when there is none.
    private mutating func randomFile() -> String? {
        let files = nodes.filter { if case .file = $0.value { return $0.key != SimulatedHome.mailbox } else { return false } }
            .keys.sorted()
        return files.isEmpty ? nil : files[random.below(files.count)]
    }

    private mutating func takeSeed() -> UInt64 {
        nextSeed += 1
        return nextSeed
    }

    // MARK: Comparing

    /// Every way the tree at `actual` differs from `expected` (empty when it is exactly
    /// that tree: the same names, kinds, modes, symlink targets and file bytes).
    static func differences(expected: Snapshot, actual: String) throws -> [String] {
        var problems: [String] = []
        var seen = Set<String>()
        func walk(_ relative: String) throws {
            let here = relative.isEmpty ? actual : actual + "/" + relative
            for name in try RawFileSystem.listDirectory(RawFileSystem.bytes(here)) {
                let key = (relative.isEmpty ? "" : relative + "/") + String(decoding: name, as: UTF8.self)
                let path = RawFileSystem.bytes(actual + "/" + key)
                guard let info = RawFileSystem.lstat(path) else { problems.append("\(key): cannot lstat"); continue }
                seen.insert(key)
                let mode = info.st_mode & 0o7777
                switch (info.st_mode & S_IFMT, expected[key]) {
                case (S_IFDIR, .directory(let want)?):
                    if mode != want { problems.append("\(key): mode \(String(mode, radix: 8)), expected \(String(want, radix: 8))") }
                    try walk(key)
                case (S_IFREG, .file(let seed, let size, let want)?):
                    if mode != want { problems.append("\(key): mode \(String(mode, radix: 8)), expected \(String(want, radix: 8))") }
                    if Int(info.st_size) != size {
                        problems.append("\(key): \(info.st_size) bytes, expected \(size)")
                    } else if try RawFileSystem.readFile(path) != Fixtures.pseudoRandomBytes(count: size, seed: seed) {
                        problems.append("\(key): other bytes than were saved")
                    }
                case (S_IFLNK, .symlink(let target)?):
                    let have = RawFileSystem.readLink(path).map { String(decoding: $0, as: UTF8.self) }
                    if have != target { problems.append("\(key): a symlink to \(have ?? "?"), expected \(target)") }
                case (_, nil):
                    problems.append("\(key): restored, but not in the tree of that night")
                default:
                    problems.append("\(key): another kind of file than \(String(describing: expected[key]))")
                }
            }
        }
        try walk("")
        for key in expected.keys.sorted() where !seen.contains(key) { problems.append("\(key): missing") }
        return problems
    }
}

extension SeededGenerator {
    /// A number in `0..<bound` (0 when bound is 0).
    mutating func below(_ bound: Int) -> Int {
        bound <= 0 ? 0 : Int(next() % UInt64(bound))
    }
}
