import BackupCore
import Foundation
import KeepsakeArchive
import KeepsakeModel
import KeepsakeScan
import KeepsakeStorage
import KeepsakeSupport
import TerminalUI

/// `keepsake backup`: sources (or stdin) into a compressed archive in the destination.
struct BackupCommand: KeepsakeCommand {
    // MARK: Spec

    static let spec = CommandSpec(
        name: "backup",
        abstract: "Back up files and folders (or standard input) into the destination.",
        discussion: "Each backup is one pax tar archive, compressed (zstd by default), with a manifest holding a SHA-256 for every file. Nothing is visible in the destination until the backup is complete. Files that cannot be read are reported; the backup is still committed and the exit code is 3.",
        arguments: [ArgumentSpec(.path, help: "A file or folder to back up.", optional: true, repeating: true, takesPath: true)],
        options: [
            CommonOptions.dest, CommonOptions.s3Endpoint,
            OptionSpec(.compression, short: "c", kind: .value(valueName: "codec"),
                       allowedValues: Compression.allCases.map(\.rawValue), defaultDescription: "zstd",
                       help: "How to compress the archive."),
            OptionSpec(.level, short: "l", kind: .value(valueName: "n"),
                       help: "Compression level: zstd 1-19 (default 3), gzip 1-9 (6), xz 0-9 (6), lz4 1-9 (1)."),
            OptionSpec(.exclude, short: "e", kind: .value(valueName: "pattern"), repeatable: true,
                       help: "Leave out paths matching a gitignore-style pattern: *, **, ?, [..], a leading / anchors to the source, a trailing / matches only folders, ! re-includes."),
            OptionSpec(.excludeFrom, kind: .value(valueName: "file"), repeatable: true,
                       help: "Read exclude patterns from a file, one per line (# starts a comment).", takesPath: true),
            OptionSpec(.excludeCaches, help: "Leave out the contents of folders holding a valid CACHEDIR.TAG (the folder and its tag are kept)."),
            OptionSpec(.excludeIfPresent, kind: .value(valueName: "name"), repeatable: true,
                       help: "Leave out the contents of folders holding a file of this name (the folder and the file are kept)."),
            OptionSpec(.oneFileSystem, short: "x", help: "Stay on the file system of each source; mount points are kept, empty."),
            OptionSpec(.tag, short: "t", kind: .value(valueName: "tag"), repeatable: true,
                       help: "Label the backup (shown by list)."),
            OptionSpec(.dryRun, short: "n", help: "Scan and count what would be backed up; write nothing."),
            OptionSpec(.list, help: "With --dry-run: print every path that would be saved ('+ PATH') and every path left out with the rule that left it out ('- PATH  (rule)'); the summary goes to stderr."),
            OptionSpec(.host, kind: .value(valueName: "name"), defaultDescription: "this host's name",
                       help: "Record the backup as made by this host (a container, a reinstalled machine): its chain, 'latest' and prune's groups follow the name."),
            OptionSpec(.stdin, help: "Back up standard input (a database dump, say) as one file instead of paths."),
            OptionSpec(.stdinName, kind: .value(valueName: "name"), defaultDescription: "stdin",
                       help: "The file name standard input gets in the backup.", takesPath: true),
            OptionSpec(.threads, kind: .value(valueName: "n"), defaultDescription: "number of CPUs",
                       help: "Compressor threads (zstd and xz)."),
            OptionSpec(.readers, kind: .value(valueName: "n"), defaultDescription: "one per CPU, 2 to 8",
                       help: "Files read at once, ahead of the archive (1 reads one file at a time)."),
            OptionSpec(.full, help: "Make a full backup, starting a new chain, even when an incremental one is possible."),
            OptionSpec(.fullEvery, kind: .value(valueName: "n"),
                       defaultDescription: "\(ChainPolicy.defaultFullEvery); where prune writes supplements, when a restore would read over \(ChainPolicy.archiveLimit) archives",
                       help: "Start a new chain once the current one holds this many backups."),
            OptionSpec(.fullIfOlderThan, kind: .value(valueName: "duration"),
                       defaultDescription: "\(ChainPolicy.defaultFullIfOlderThan); none where prune writes supplements",
                       help: "Start a new chain when the current chain's full backup is older than this (e.g. 7d, 2w, 1m)."),
            OptionSpec(.ignoreCtime, help: "Decide a file is unchanged without looking at its ctime."),
            OptionSpec(.ignoreInode, help: "Decide a file is unchanged without looking at its inode and device numbers."),
            OptionSpec(.reread, help: "Read and hash every file, and compare contents instead of size and times."),
            OptionSpec(.noBlocks, help: "Store a changed file of 1 MiB or more whole. By default only its changed "
                       + "64 KiB blocks are stored (and prune moves them into supplements like files)."),
            OptionSpec(.blocks, help: "Store changed big files by their changed blocks (the default)."),
            CommonOptions.lockWait,
            CommonOptions.progress,
        ] + KeyOptions.writing + [SigningOptions.signingKey] + CommonOptions.global,
        examples: [
            .init(command: "keepsake backup ~/Documents", explanation: "Back up a folder to the default destination."),
            .init(command: "keepsake backup /etc /home --dest /mnt/usb/backups --exclude '*.tmp' --exclude-caches",
                  explanation: "Back up two folders to a USB disk, leaving out temporary files and caches."),
            .init(command: "pg_dump shop | keepsake backup --stdin --stdin-name shop.sql --tag db",
                  explanation: "Back up a database dump from a pipe."),
            .init(command: "keepsake backup /srv --dest s3://backups/web --recipient age1…",
                  explanation: "Encrypt to a public key: only its identity (kept elsewhere) can read the backup."),
        ]
    )

    // MARK: Validated options

    private var request: BackupRequest
    private let destinationOption: String?
    private let progress: Bool
    /// `--list`: a dry run's paths, saved and left out.
    private let listsPaths: Bool

    init(arguments: ParsedArguments, context: CommandContext) throws {
        var problems = UsageProblems(Self.spec)
        let paths = arguments.argumentPaths(.path)
        let readsStdin = arguments.flag(.stdin)
        if readsStdin && !paths.isEmpty {
            problems.add("Give either PATHs or '--stdin', not both.")
        }
        if !readsStdin && paths.isEmpty {
            problems.add("Missing expected argument 'PATH...'. Give the files or folders to back up (or '--stdin').")
        }
        if arguments.value(.stdinName) != nil && !readsStdin {
            problems.add("The option '--stdin-name' only applies with '--stdin'.")
        }
        if arguments.flag(.list) && !arguments.flag(.dryRun) {
            problems.add("The option '--list' only applies with '--dry-run'.")
        }
        if arguments.flag(.list) && readsStdin {
            problems.add("The option '--list' lists paths; it does not apply with '--stdin'.")
        }
        listsPaths = arguments.flag(.list)
        let host = arguments.value(.host)
        if let host, let problem = HostIdentity.problem(with: host) {
            problems.add("The value '\(host)' is invalid for '--host <name>': \(problem).")
        }
        if readsStdin && context.capabilities.stdinIsTTY {
            problems.add("Standard input is a terminal; pipe the data in, e.g. 'pg_dump shop | keepsake backup --stdin'.")
        }
        let compression = arguments.value(.compression).flatMap(Compression.init(rawValue:)) ?? .zstd
        var level: Int?
        if let text = arguments.value(.level) {
            if compression == .none {
                problems.add("The option '--level' does not apply to '--compression none'.")
            } else if let value = Int(text), let range = compression.levelRange, range.contains(value) {
                level = value
            } else if let range = compression.levelRange {
                problems.add("The value '\(text)' is invalid for '--level <n>'. Use a whole number from \(range.lowerBound) to \(range.upperBound) for \(compression.rawValue).")
            }
        }
        var threads = ProcessInfo.processInfo.activeProcessorCount
        if let text = arguments.value(.threads) {
            if let value = Int(text).flatMap({ BackupSettingRules.accepted($0, in: BackupSettingRules.threads) }) {
                threads = value
            } else {
                problems.add("The value '\(text)' is invalid for '--threads <n>'. Use a whole number "
                    + "\(Self.wording(BackupSettingRules.threads)).")
            }
        }
        var readers = BackupRequest.defaultReaders
        if let text = arguments.value(.readers) {
            if let value = Int(text).flatMap({ BackupSettingRules.accepted($0, in: BackupSettingRules.readers) }) {
                readers = value
            } else {
                problems.add("The value '\(text)' is invalid for '--readers <n>'. Use a whole number "
                    + "\(Self.wording(BackupSettingRules.readers)).")
            }
        }
        var patterns = arguments.values(.exclude)
        for file in arguments.paths(.excludeFrom) {
            switch Self.readExcludeFile(file) {
            case .success(let contents): patterns.append(contentsOf: ExcludeRules.patterns(fromFileContents: contents))
            case .failure(let problem): problems.add("Cannot read the exclude file '\(PathBytes.display(file))' given to '--exclude-from': \(problem.reason).")
            }
        }
        var rules = try? ExcludeRules(patterns: [])
        do {
            rules = try ExcludeRules(patterns: patterns)
        } catch {
            problems.add("\(error).")
        }
        for marker in arguments.values(.excludeIfPresent) {
            if let problem = BackupSettingRules.markerProblem(marker) {
                problems.add("The value '\(marker)' is invalid for '--exclude-if-present <name>': \(problem).")
            }
        }
        for tag in arguments.values(.tag) {
            if let problem = BackupSettingRules.tagProblem(tag) {
                problems.add("The value '\(tag)' is invalid for '--tag <tag>': \(problem).")
            }
        }
        let tags = BackupSettingRules.distinct(arguments.values(.tag).filter { BackupSettingRules.tagProblem($0) == nil })
        var chain = ChainPolicy(forceFull: arguments.flag(.full), ignoreCtime: arguments.flag(.ignoreCtime),
                                ignoreInode: arguments.flag(.ignoreInode), reread: arguments.flag(.reread),
                                storesBlocks: !arguments.flag(.noBlocks))
        if arguments.flag(.blocks), arguments.flag(.noBlocks) {
            problems.add("'--blocks' and '--no-blocks' cannot be used together: choose one.")
        }
        if let text = arguments.value(.fullEvery) {
            if let value = Int(text).flatMap({ BackupSettingRules.accepted($0, in: BackupSettingRules.fullEvery) }) {
                chain.fullEvery = value
            } else {
                problems.add("The value '\(text)' is invalid for '--full-every <n>'. Use a whole number "
                    + "\(Self.wording(BackupSettingRules.fullEvery)) (1 makes every backup full).")
            }
        }
        if let text = arguments.value(.fullIfOlderThan) {
            do {
                chain.fullIfOlderThan = try DurationSpec(parsing: text)
            } catch {
                problems.add("The value '\(text)' is invalid for '--full-if-older-than <duration>': \(error.reason).")
            }
        }
        try problems.throwIfAny()
        guard let rules else { throw UsageError.custom("The exclude patterns are invalid.", command: Self.spec) }
        request = BackupRequest(
            sources: [],
            compression: compression, level: level, threads: threads, tags: tags,
            scan: ScanOptions(excludes: rules, excludeCaches: arguments.flag(.excludeCaches),
                              excludeIfPresent: arguments.values(.excludeIfPresent),
                              oneFileSystem: arguments.flag(.oneFileSystem)),
            chain: chain,
            dryRun: arguments.flag(.dryRun), toolVersion: "keepsake \(KeepsakeCLI.version)",
            now: try CommandClock.now(environment: context.environment, command: Self.spec))
        // Paths go as bytes: a name need not be UTF-8.
        request.sourcePaths = paths
        request.stdinPath = readsStdin ? (arguments.path(.stdinName) ?? Array("stdin".utf8)) : nil
        request.readers = readers
        request.readPause = Self.testReadPause(context.environment)
        request.lockWait = try CommonOptions.lockWaitSeconds(arguments, command: Self.spec)
        if !request.dryRun {
            request.encryption = try KeyOptions.encryption(arguments, context: context)
            request.signingKey = try SigningOptions.signingKey(arguments, context: context)
        }
        request.allowUnencrypted = arguments.flag(.noEncryption)
        if let host { request.host = host }
        request.changeCacheRoot = context.cacheRoot
        destinationOption = arguments.value(.dest)
        progress = arguments.flag(.progress)
    }

    /// "from 1 to 256": a rule's range, as the messages say it.
    private static func wording(_ range: ClosedRange<Int>) -> String {
        "from \(range.lowerBound) to \(range.upperBound)"
    }

    /// Fault-injection tests (this command's and `run`'s) slow reading down to change
    /// sources mid-run: `KEEPSAKE_TEST_READ_PAUSE_MS` (see docs/development.md).
    static func testReadPause(_ environment: [String: String]) -> TimeInterval {
        guard let pause = environment["KEEPSAKE_TEST_READ_PAUSE_MS"].flatMap(Double.init), pause > 0 else { return 0 }
        return pause / 1000
    }

    /// Why a file could not be read, for `readExcludeFile`.
    private struct ReadProblem: Error {
        let reason: String
    }

    /// The text of an exclude file named by bytes (its name need not be UTF-8; its text must be).
    private static func readExcludeFile(_ path: [UInt8]) -> Result<String, ReadProblem> {
        let fd = PathBytes.syscall(path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return .failure(ReadProblem(reason: String(cString: strerror(errno)))) }
        let file = FileByteSource(fd: fd, name: PathBytes.display(path))
        defer { file.close() }
        do {
            guard let text = PathBytes.validString(try file.readAll(limit: 16 << 20)) else {
                return .failure(ReadProblem(reason: "it is not UTF-8 text"))
            }
            return .success(text)
        } catch {
            return .failure(ReadProblem(reason: "\(error)"))
        }
    }

    // MARK: Running

    func run(context: CommandContext) throws -> ExitCode {
        let storage = try context.destination(destinationOption)
        let presenter = EventPresenter(context: context, progress: progress)
        let engine = BackupEngine(storage: storage, keyring: context.keyring, events: presenter, cancellation: context.cancellation)
        let result: BackupResult
        var listing = DryRunListing(json: context.json)
        do {
            result = try engine.run(request, listing: listsPaths ? { path in
                if let line = listing.add(path) { context.printLine(line) }
            } : nil)
        } catch {
            presenter.finish()
            throw error
        }
        presenter.finish()
        let code: ExitCode = result.warnings.isEmpty ? .success : .partial
        if context.json {
            var object = BackupResultJSON.encode(result, destination: storage.location)
            if listsPaths { listing.addJSON(to: &object) }
            object["exit_code"] = .int(Int64(code.rawValue))
            context.printJSON(.object(object))
        } else if !context.quiet {
            show(result, destination: storage.location, context: context)
        }
        return code
    }

    // MARK: Output

    private func facts(_ result: BackupResult, destination: String) -> [KeyValueList.Item] {
        let summary = result.summary
        var counts = "\(Units.count(Int(summary.fileCount), "file")), \(Units.count(Int(summary.directoryCount), "folder"))"
        if summary.symlinkCount > 0 { counts += ", \(Units.count(Int(summary.symlinkCount), "symlink"))" }
        if summary.hardlinkCount > 0 { counts += ", \(Units.count(Int(summary.hardlinkCount), "hard link"))" }
        if summary.otherCount > 0 { counts += ", \(Units.count(Int(summary.otherCount))) other" }
        var items: [KeyValueList.Item] = []
        if !result.dryRun {
            items.append(.init("Backup", summary.id.rawValue, valueRole: .accent))
            if let parent = summary.parent {
                items.append(.init("Kind", "incremental on \(parent.rawValue) (backup \(summary.chainLength) of its chain); "
                    + "\(Units.count(Int(summary.newFileCount), "new or changed file")), \(Units.bytes(summary.newBytes))"))
            } else {
                items.append(.init("Kind", "full"))
            }
        }
        items.append(.init("Sources", summary.sources.joined(separator: ", ")))
        items.append(.init("Contents", counts))
        if let archive = summary.archive {
            // An incremental's archive holds only the new content: the ratio is of that.
            let content = summary.isIncremental
                ? "\(Units.bytes(summary.originalBytes)) in all, \(Units.bytes(summary.newBytes)) new" : Units.bytes(summary.originalBytes)
            items.append(.init("Size", "\(content) → \(Units.bytes(archive.size)) stored "
                + "(\(summary.compression.rawValue), ratio \(CompressionRatio.text(summary)))"))
        } else {
            items.append(.init("Size", Units.bytes(summary.originalBytes)))
        }
        let rate = result.elapsed > 0 ? " (\(Units.rate(bytesPerSecond: Double(summary.originalBytes) / result.elapsed)))" : ""
        items.append(.init("Time", Units.elapsed(result.elapsed) + rate))
        items.append(.init("Destination", destination))
        if let name = result.archiveName { items.append(.init("Archive", name)) }
        if let encryption = summary.encryption { items.append(.init("Encrypted", Self.describe(encryption))) }
        if let key = result.signedBy { items.append(.init("Signed", "by \(key.encoded)")) }
        if !summary.tags.isEmpty { items.append(.init("Tags", summary.tags.joined(separator: ", "))) }
        if !result.warnings.isEmpty {
            items.append(.init("Warnings", "\(Units.count(result.warnings.count, "path")) could not be read completely (see above)",
                               valueRole: .warning))
        }
        return items
    }

    /// `age, to age1… and age1…` or `age, with a passphrase`.
    static func describe(_ encryption: BackupEncryption) -> String {
        switch encryption {
        case .recipients(let keys): return "age, to " + keys.joined(separator: ", ")
        case .passphrase: return "age, with a passphrase"
        }
    }

    private func show(_ result: BackupResult, destination: String, context: CommandContext) {
        let list = KeyValueList(items: facts(result, destination: destination))
        if result.dryRun && listsPaths {
            // stdout holds the paths alone, for scripts and grep.
            context.message(Stack([Text("Dry run: nothing was written.", role: .muted), list]))
        } else if result.dryRun {
            context.print(Stack([Text("Dry run: nothing was written.", role: .muted), list]))
        } else if context.capabilities.stdoutIsTTY {
            let badge = result.warnings.isEmpty ? Badge("DONE", role: .success) : Badge("PARTIAL", role: .warning)
            context.print(Stack([badge, context.summaryCard(title: "Backup committed", content: [list])]))
        } else {
            context.print(list)
        }
    }

}

// MARK: - Option keys

extension OptionKey {
    static let compression = OptionKey("compression")
    static let exclude = OptionKey("exclude")
    static let excludeCaches = OptionKey("exclude-caches")
    static let excludeFrom = OptionKey("exclude-from")
    static let excludeIfPresent = OptionKey("exclude-if-present")
    static let full = OptionKey("full")
    static let list = OptionKey("list")
    static let fullEvery = OptionKey("full-every")
    static let fullIfOlderThan = OptionKey("full-if-older-than")
    static let ignoreCtime = OptionKey("ignore-ctime")
    static let ignoreInode = OptionKey("ignore-inode")
    static let level = OptionKey("level")
    static let oneFileSystem = OptionKey("one-file-system")
    static let reread = OptionKey("reread")
    static let blocks = OptionKey("blocks")
    static let noBlocks = OptionKey("no-blocks")
    static let stdin = OptionKey("stdin")
    static let stdinName = OptionKey("stdin-name")
    static let tag = OptionKey("tag")
    static let threads = OptionKey("threads")
    static let readers = OptionKey("readers")
}
