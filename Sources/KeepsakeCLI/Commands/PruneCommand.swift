import BackupCore
import Foundation
import KeepsakeAge
import KeepsakeConfig
import KeepsakeJSON
import KeepsakeModel
import KeepsakeSigning
import KeepsakeSupport
import TerminalUI

/// `keepsake prune`: removes the backups a retention policy does not keep, with the rules of
/// restic's `forget`, never one that a kept backup needs.
struct PruneCommand: KeepsakeCommand {
    // MARK: Spec

    /// The counted rules: option and the policy field it sets.
    private static let countOptions: [(key: OptionKey, field: WritableKeyPath<RetentionPolicy, Int?> & Sendable, help: String)] = [
        (.keepLast, \.keepLast, "Keep the N newest backups."),
        (.keepHourly, \.keepHourly, "Keep the newest backup of each of the N newest hours that have backups."),
        (.keepDaily, \.keepDaily, "Keep the newest backup of each of the N newest days that have backups."),
        (.keepWeekly, \.keepWeekly, "Keep the newest backup of each of the N newest ISO weeks (Monday-Sunday) that have backups."),
        (.keepMonthly, \.keepMonthly, "Keep the newest backup of each of the N newest months that have backups."),
        (.keepYearly, \.keepYearly, "Keep the newest backup of each of the N newest years that have backups."),
    ]

    static let spec = CommandSpec(
        name: "prune",
        abstract: "Remove the backups a retention policy does not keep.",
        discussion: "The rules are restic's 'forget --keep-*' rules, applied to each group of backups of the same host and sources (this host's only, unless --host or --all-hosts): a backup is kept when any rule keeps it. Counts are whole numbers of 0 or more (0 leaves the rule unused, as in a profile), or -1 (or 'unlimited') for every period. What a kept incremental backup takes from a backup the rules let go is first copied into a supplement of the kept one (written and read back before anything is removed), and that backup is removed; with --keep-chains (keep-chains in a profile's retention), a kept backup keeps what it takes files from instead ('needed by ID'). An encrypted backup's supplement is encrypted as the backup is, and only to keys given here: a key that opens it (--identity, --passphrase-file) and, for public keys, every key it is encrypted to (--recipient, --recipients-file, an identity's own, or the profile's recipients); without them it keeps what it takes files from. A backup whose manifest cannot be read is always kept. With --identity or --passphrase-file, what an encrypted backup relies on is read from its encrypted manifest too, not only from its summary in the clear. With --signed-by, only backups signed by that key count for the rules; the others are kept and named (backups planted beside yours cannot push them out). With --profile and no rule given, the profile's retention policy is applied. Prune refuses to run without a rule, and refuses a policy that would remove every backup of a group.\nEach backup is un-committed first (its manifest removed), then its archive, so an interruption never leaves a listed backup without its archive.",
        options: DestinationSelection.options
            + countOptions.map { OptionSpec($0.key, kind: .value(valueName: "n"), help: $0.help) }
            + [
                OptionSpec(.keepWithin, kind: .value(valueName: "duration"),
                           help: "Keep every backup made less than this long before the newest backup: numbers with units y, m (months), w, d, h, e.g. 7d, 2w, 1y6m, 36h."),
                OptionSpec(.keepTag, kind: .value(valueName: "tags"), repeatable: true,
                           help: "Keep every backup that carries all of these comma-separated tags ('' for backups without tags)."),
                OptionSpec(.dryRun, short: "n", help: "Show what would be kept and removed, and why; remove nothing."),
                OptionSpec(.keepChains,
                           help: "Keep every backup a kept incremental takes files from ('needed by ID'), instead of copying those files into supplements and removing it."),
                CommonOptions.host,
                CommonOptions.allHosts,
                CommonOptions.lockWait,
            ]
            + KeyOptions.pruning
            + [SigningOptions.signedBy]
            + CommonOptions.global,
        examples: [
            .init(command: "keepsake prune --keep-daily 7 --keep-weekly 4 --keep-monthly 12 --dry-run",
                  explanation: "Show which backups a week of dailies, a month of weeklies and a year of monthlies keep."),
            .init(command: "keepsake prune --keep-last 10 --keep-tag release",
                  explanation: "Keep the ten newest backups and every backup tagged 'release'."),
            .init(command: "keepsake prune --keep-within 30d --dest /mnt/usb/backups --json",
                  explanation: "Keep the last 30 days of backups on a USB disk; report as JSON."),
        ]
    )

    // MARK: Validated options

    private let policy: RetentionPolicy
    private let dryRun: Bool
    /// Unless `--keep-chains` (or the profile's `keep-chains`): supplements instead of keeping
    /// what kept backups take files from.
    private let consolidate: Bool
    private let destinationOption: String?
    /// Whose backups the policy is applied to.
    private let hosts: HostSelection
    private let lockWait: TimeInterval
    /// What retention is judged at (`CommandClock`).
    private let now: Date

    /// `--signed-by` (or the profile's): only backups this key signed count for the policy.
    private let signedBy: SigningPublicKey?
    /// `--recipient`, `--recipients-file` (or the profile's): keys supplements may be encrypted to.
    private let recipients: [AgeRecipient]

    init(arguments: ParsedArguments, context: CommandContext) throws {
        var problems = UsageProblems(Self.spec)
        var policy = RetentionPolicy()
        for option in Self.countOptions {
            guard let text = arguments.value(option.key) else { continue }
            if let count = PruneCommand.count(text) {
                policy[keyPath: option.field] = count
            } else {
                problems.add("The value '\(text)' is invalid for '\(option.key) <n>'. Use a whole number of 0 or more (0 leaves the rule unused), or -1 (or 'unlimited') to keep one backup of every period.")
            }
        }
        if let text = arguments.value(.keepWithin) {
            do {
                policy.keepWithin = try DurationSpec(parsing: text)
            } catch {
                problems.add("The value '\(text)' is invalid for '--keep-within <duration>': \(error.reason).")
            }
        }
        for text in arguments.values(.keepTag) {
            if let tags = RetentionPolicy.tagList(text) {
                policy.keepTags.append(tags)
            } else {
                problems.add("The value '\(text)' is invalid for '--keep-tag <tags>'. Separate tags with single commas (e.g. db,nightly), or give '' for backups without tags.")
            }
        }
        // A key, when given, checks what encrypted backups rely on against their manifests
        // (used only when it opens them without asking).
        let selection = try DestinationSelection.resolve(arguments, context: context)
        signedBy = try SigningOptions.signedBy(arguments, profile: selection.profile?.signing ?? Profile.SigningSettings())
        recipients = try KeyOptions.recipients(arguments, settings: selection.profile?.encryption ?? Profile.EncryptionSettings(),
                                               context: context)
        let rules = Self.countOptions.map(\.key) + [.keepWithin, .keepTag]
        let givesRules = !rules.allSatisfy({ arguments.values($0).isEmpty })
        if !givesRules, let profile = selection.profile {
            // The profile's policy, as `keepsake run` applies it.
            guard let retention = profile.retention else {
                throw UsageError.custom("Profile '\(profile.name)' has no retention policy ([profiles.\(profile.name).retention] "
                    + "in \(profile.file)); give the rules of what to keep, such as --keep-daily 7.", command: Self.spec)
            }
            policy = retention
        } else if policy.isEmpty && problems.isEmpty {
            // As in a profile's retention table, a count of 0 leaves its rule unused.
            problems.add("Give at least one rule of what to keep: --keep-last, --keep-hourly, --keep-daily, --keep-weekly, --keep-monthly, --keep-yearly, --keep-within or --keep-tag (prune never removes backups without a policy"
                + (givesRules ? "; a count of 0 leaves its rule unused)." : ")."))
        }
        if arguments.value(.host) != nil && arguments.flag(.allHosts) {
            problems.add("Give either '--host' or '--all-hosts', not both.")
        }
        try problems.throwIfAny()
        hosts = HostSelection.from(host: selection.host(arguments), allHosts: arguments.flag(.allHosts))
        self.policy = policy
        dryRun = arguments.flag(.dryRun)
        consolidate = !(arguments.flag(.keepChains) || (!givesRules && selection.profile?.keepsChains == true))
        destinationOption = selection.destination
        lockWait = try CommonOptions.lockWaitSeconds(arguments, command: Self.spec)
        now = try CommandClock.now(environment: context.environment, command: Self.spec)
    }

    /// A count option's value: 0 or more (0: the rule is unused, as in a profile), or -1 /
    /// `unlimited`; nil when invalid.
    private static func count(_ text: String) -> Int? {
        RetentionPolicy.count(word: text) ?? Int(text).flatMap { RetentionPolicy.count($0) }
    }

    // MARK: Running

    func run(context: CommandContext) throws -> ExitCode {
        let storage = try context.destination(destinationOption)
        let presenter = EventPresenter(context: context, progress: false)
        let engine = PruneEngine(storage: storage, keyring: context.keyring, events: presenter, cancellation: context.cancellation)
        var request = PruneRequest(policy: policy, dryRun: dryRun, now: now)
        request.hosts = hosts
        request.lockWait = lockWait
        request.signedBy = signedBy
        request.consolidate = consolidate
        request.recipients = recipients
        // Fault-injection tests slow removals down to signal a prune between two (see docs/development.md).
        if let pause = context.environment["KEEPSAKE_TEST_REMOVAL_PAUSE_MS"].flatMap(Double.init), pause > 0 {
            request.removalPause = pause / 1000
        }
        let result = try engine.run(request)
        presenter.finish()
        if context.json {
            context.printJSON(json(result, destination: storage.location))
        } else if result.decisions.isEmpty {
            context.note("No backups in \(storage.location); nothing to prune.")
        } else if !context.quiet {
            show(result, context: context)
        }
        return .success
    }

    // MARK: Output

    private func show(_ result: PruneResult, context: CommandContext) {
        let groups = Set(result.decisions.map { [$0.host] + $0.sources.sorted() })
        var columns: [Table.Column] = [
            .init("ID", minWidth: 25, priority: 10),
            .init("CREATED", minWidth: 16, priority: 4, optional: true),
            // Kept on the backup's row while there is room; the decision and its reason come first.
            .init("KIND", minWidth: 4, priority: 5, optional: true),
            .init("ACTION", minWidth: 6, priority: 9),
            .init("REASON", minWidth: 12, flexible: true, priority: 8),
        ]
        if groups.count > 1 { columns.append(.path("SOURCES")) }
        let rows: [[Table.Cell]] = result.decisions.map { decision in
            var row: [Table.Cell] = [
                Table.Cell(decision.id.rawValue, role: .accent),
                Table.Cell(decision.created.map(Timestamp.localShort) ?? ""),
                Table.Cell(decision.isIncremental ? "INCR" : "FULL"),
                decision.keep ? Table.Cell("keep", role: .success) : Table.Cell("remove", role: .danger),
                Table.Cell(PruneCommand.reasonText(decision.reasons), role: decision.keep ? .plain : .muted),
            ]
            if groups.count > 1 { row.append(Table.Cell(decision.sources.joined(separator: ", "))) }
            return row
        }
        context.print(Table(columns: columns, cells: rows))

        let count = result.removed.count
        let noun = count == 1 ? "backup" : "backups"
        let line: String
        if count == 0 {
            line = "Nothing to remove: all \(result.decisions.count) \(result.decisions.count == 1 ? "backup is" : "backups are") kept."
        } else if result.dryRun {
            line = "Would remove \(count) \(noun), freeing \(Units.bytes(result.freedBytes))\(PruneCommand.supplementText(result))."
        } else {
            line = "Removed \(count) \(noun), freeing \(Units.bytes(result.freedBytes))\(PruneCommand.supplementText(result))."
        }
        context.printLine(context.out.apply(result.dryRun || count == 0 ? .plain : .success, to: line))
    }

    /// With consolidation, what was copied into supplements first (empty without).
    static func supplementText(_ result: PruneResult) -> String {
        guard result.supplementedFiles > 0 else { return "" }
        let files = result.supplementedFiles == 1 ? "1 file" : "\(result.supplementedFiles) files"
        let copied = "\(files) (\(Units.bytes(result.supplementedBytes))) that kept backups take from them"
        guard !result.dryRun else { return ", after copying " + copied + " into supplements" }
        let supplements = result.supplementsWritten == 1 ? "1 supplement" : "\(result.supplementsWritten) supplements"
        return ", after copying \(copied) into \(supplements) (\(Units.bytes(result.supplementStoredBytes)) stored)"
    }

    /// A decision's reasons for the table: several "needed by" reasons are summed up.
    static func reasonText(_ reasons: [String]) -> String {
        let prefix = "needed by "
        let needs = reasons.filter { $0.hasPrefix(prefix) }
        var shown = reasons.filter { !$0.hasPrefix(prefix) }
        if let first = needs.first {
            shown.append(needs.count == 1 ? first : "\(first) and \(needs.count - 1) more")
        }
        return shown.joined(separator: ", ")
    }

    private func json(_ result: PruneResult, destination: String) -> JSONValue {
        var object = PruneResultJSON.encode(result, destination: destination, policy: policy.description)
        object["exit_code"] = .int(Int64(ExitCode.success.rawValue))
        return .object(object)
    }
}

// MARK: - Option keys

extension OptionKey {
    static let keepDaily = OptionKey("keep-daily")
    static let keepHourly = OptionKey("keep-hourly")
    static let keepLast = OptionKey("keep-last")
    static let keepMonthly = OptionKey("keep-monthly")
    static let keepTag = OptionKey("keep-tag")
    static let keepWeekly = OptionKey("keep-weekly")
    static let keepWithin = OptionKey("keep-within")
    static let keepYearly = OptionKey("keep-yearly")
}

extension OptionKey {
    static let keepChains = OptionKey("keep-chains")
}
