import BackupCore
import Foundation
import KeepsakeConfig
import KeepsakeJSON
import KeepsakeSigning
import KeepsakeStorage
import TerminalUI

/// `keepsake run PROFILE`: the one line a crontab needs. Runs the profile's before hook,
/// the backup, the prune (when the profile has a retention policy), the verification of the
/// new backup, and the after hook.
///
/// Nothing goes to standard output on success unless `--verbose` (the summaries) or `--json`
/// (one document); warnings, errors and the hooks' output go to standard error. The exit code
/// is the most severe of the steps': 130 (interrupted) over 5 (locked) over 4 (the new backup
/// is damaged) over 1 (a step failed) over 3 (some files could not be read) over 0.
struct RunCommand: KeepsakeCommand {
    // MARK: Spec

    static let spec = CommandSpec(
        name: "run",
        abstract: "Run a profile of the configuration file: backup, prune, verify (for cron).",
        discussion: "Runs the profile's 'before' command (a non-zero exit stops the run with exit 1), backs up, prunes with the profile's retention policy, verifies the new backup, then runs the 'after' command with KEEPSAKE_STATUS (success or failure), KEEPSAKE_EXIT_CODE and KEEPSAKE_BACKUP_ID set. Prints nothing on standard output on success unless --verbose or --json; warnings and errors go to standard error. The exit code is the most severe of the steps: 130, 5, 4, 1, 3, 0 in that order.",
        arguments: [ArgumentSpec(.profile, help: "The profile's name ([profiles.NAME] in the configuration file).")],
        options: [
            ProfileLoader.configOption,
            OptionSpec(.verbose, short: "v", help: "Print the summaries of the backup, the prune and the verification."),
            CommonOptions.progress,
        ] + CommonOptions.global,
        examples: [
            .init(command: "keepsake run home", explanation: "Run the profile 'home' of ~/.config/keepsake/config.toml."),
            .init(command: "30 2 * * * /usr/local/bin/keepsake run home --quiet",
                  explanation: "The crontab line for a nightly run (see 'keepsake schedule')."),
        ]
    )

    // MARK: Validated options

    private let profileName: String
    private let configOption: String?
    private let verbose: Bool
    private let progress: Bool
    /// What the backup is dated and retention judged by (`CommandClock`).
    private let now: Date

    init(arguments: ParsedArguments, context: CommandContext) throws {
        var problems = UsageProblems(Self.spec)
        profileName = arguments.argument(.profile) ?? ""
        configOption = arguments.value(.config)
        verbose = arguments.flag(.verbose)
        progress = arguments.flag(.progress)
        now = try CommandClock.now(environment: context.environment, command: Self.spec)
        if verbose && context.quiet { problems.add("Give either '--verbose' or '--quiet', not both.") }
        if verbose && context.json { problems.add("Give either '--verbose' or '--json', not both.") }
        try problems.throwIfAny()
    }

    // MARK: Running

    func run(context: CommandContext) throws -> ExitCode {
        let (config, profile) = try ProfileLoader.load(profileName, configOption: configOption, context: context)
        var state = RunState(profile: profile, config: config)
        context.s3Overrides = profile.s3
        // The run's verify opens the new backup with the profile's identities or passphrase;
        // without them it checks the stored bytes (this host need not be able to read them).
        context.keyring = try KeyOptions.keyring(nil, identityFiles: profile.encryption.identityFiles,
                                                 passphraseFile: profile.encryption.passphraseFile, context: context)
        let storage = try context.destination(profile.destination)
        let copyTo = try profile.copyTo.map { try context.destination($0) }
        state.destination = storage.location
        var environment = context.environment
        // A keepsake command in a hook finds the profile's destination and keys by itself.
        environment["KEEPSAKE_PROFILE"] = profile.name
        environment["KEEPSAKE_CONFIG"] = config.path

        // Before: a failure stops everything, and the after hook does not run.
        if let command = profile.before {
            let outcome = HookRunner.run(command, environment: environment, cancellation: context.cancellation)
            state.before = outcome
            if context.cancellation.isCancelled {
                state.fail(.interrupted, "Interrupted while the before command of profile '\(profile.name)' ran; no backup was made",
                           context: context)
                return finish(state, context: context)
            }
            guard outcome.succeeded else {
                state.fail(.failure, "The before command of profile '\(profile.name)' failed with \(outcome.description) "
                    + "(\(command)); no backup was made", context: context)
                return finish(state, context: context)
            }
        }

        let presenter = EventPresenter(context: context, progress: progress)
        steps(&state, storage: storage, copyTo: copyTo, presenter: presenter, context: context)
        presenter.finish()

        // After: always, once the before hook passed.
        if let command = profile.after {
            environment["KEEPSAKE_STATUS"] = state.succeeded ? "success" : "failure"
            environment["KEEPSAKE_EXIT_CODE"] = String(state.code.rawValue)
            environment["KEEPSAKE_BACKUP_ID"] = state.backup?.summary.id.rawValue ?? ""
            let interruptedBefore = context.cancellation.isCancelled
            let outcome = HookRunner.run(command, environment: environment, cancellation: context.cancellation)
            state.after = outcome
            if !interruptedBefore && context.cancellation.isCancelled {
                state.fail(.interrupted, "Interrupted while the after command of profile '\(profile.name)' ran", context: context)
            } else if !outcome.succeeded {
                state.fail(.failure, "The after command of profile '\(profile.name)' failed with \(outcome.description) (\(command))",
                           context: context)
            }
        }
        return finish(state, context: context)
    }

    // MARK: Steps

    /// Backup, prune and verify (`RunWorkflow`), each failure told on stderr as it is
    /// recorded with its exit code.
    private func steps(_ state: inout RunState, storage: any WritableStorage, copyTo: [any WritableStorage], presenter: EventPresenter,
                       context: CommandContext) {
        var request: BackupRequest
        do {
            request = try state.profile.backupRequest(toolVersion: "keepsake \(KeepsakeCLI.version)",
                                                      defaultThreads: ProcessInfo.processInfo.activeProcessorCount, now: now)
        } catch {
            state.fail(.failure, error.description, context: context)
            return
        }
        do {
            request.encryption = try KeyOptions.encryption(nil, settings: state.profile.encryption, context: context)
            request.signingKey = try SigningOptions.signingKey(nil, profile: state.profile.signing, context: context)
        } catch {
            state.fail(ExitCode(for: error), "\(error)", context: context)
            return
        }
        request.changeCacheRoot = context.cacheRoot
        request.readPause = BackupCommand.testReadPause(context.environment)
        let workflow = RunWorkflow(storage: storage, keyring: context.keyring, events: presenter, cancellation: context.cancellation)
        do {
            workflow.signatureCheck = try SigningOptions.signedBy(nil, profile: state.profile.signing).map(SignatureCheck.init(key:))
        } catch {
            state.fail(ExitCode(for: error), "\(error)", context: context)
            return
        }
        workflow.keepsChains = state.profile.keepsChains
        let outcome = workflow.run(request, retention: state.profile.retention, copyTo: copyTo, now: now)
        state.backup = outcome.backup
        state.copies = outcome.copies
        state.prune = outcome.prune
        state.verify = outcome.verify
        if outcome.backup?.warnings.isEmpty == false { state.raise(.partial) }
        let name = state.profile.name
        for failure in outcome.failures {
            switch failure.step {
            case .backup:
                state.fail(ExitCode(for: failure.error), "The backup of profile '\(name)' failed: \(failure.error)", context: context)
            case .prune:
                state.fail(ExitCode(for: failure.error), "The prune of profile '\(name)' failed: \(failure.error)", context: context)
            case .verify:
                state.fail(ExitCode(for: failure.error), "Verifying the new backup "
                    + "\(outcome.backup?.summary.id.rawValue ?? "") failed: \(failure.error)", context: context)
            case .copy:
                state.fail(ExitCode(for: failure.error), "Copying the new backup to \(failure.destination ?? "?") failed: "
                    + "\(failure.error)", context: context)
            }
        }
        guard let id = outcome.backup?.summary.id else { return }
        if outcome.newBackupPruned {
            context.warn("the new backup \(id.rawValue) was removed by the retention policy of profile "
                + "'\(name)' (no rule keeps it); there is nothing to verify")
        } else if outcome.newBackupVanished {
            state.fail(.integrity, "The new backup \(id.rawValue) is not in \(storage.location) any more; it cannot be verified",
                       context: context)
        } else if let report = outcome.verify, !report.isIntact {
            var lines = ["The new backup \(id.rawValue) is damaged:"]
            lines += report.archiveProblems.map { "  \($0)" }
            lines += report.problems.prefix(50).map { "  \($0.path): \($0.reason)" }
            if report.problems.count > 50 { lines.append("  … and \(report.problems.count - 50) more") }
            state.fail(.integrity, lines.joined(separator: "\n"), context: context)
        } else if let problem = outcome.verify?.signatureProblem {
            state.fail(.signature, "The new backup \(id.rawValue) does not pass the profile's signed-by check: \(problem)",
                       context: context)
        }
    }

    // MARK: Output

    private func finish(_ state: RunState, context: CommandContext) -> ExitCode {
        if context.json {
            context.printJSON(json(state))
        } else if verbose {
            let list = KeyValueList(items: facts(state))
            if context.capabilities.stdoutIsTTY {
                context.print(context.summaryCard(title: "Run of \(state.profile.name)", content: [list]))
            } else {
                context.print(list)
            }
        }
        return state.code
    }

    private func facts(_ state: RunState) -> [KeyValueList.Item] {
        var items: [KeyValueList.Item] = [.init("Profile", state.profile.name, valueRole: .accent)]
        if let outcome = state.before { items.append(.init("Before", outcome.description)) }
        if let result = state.backup {
            let summary = result.summary
            items.append(.init("Backup", summary.id.rawValue + (summary.isIncremental ? " (incremental)" : " (full)")))
            items.append(.init("Contents", "\(Units.count(Int(summary.fileCount), "file")), "
                + "\(Units.count(Int(summary.directoryCount), "folder")), \(Units.bytes(summary.originalBytes))"))
            if let archive = summary.archive {
                items.append(.init("Stored", Units.bytes(archive.size)))
            }
            items.append(.init("Time", Units.elapsed(result.elapsed)))
            if !result.warnings.isEmpty {
                items.append(.init("Warnings", "\(Units.count(result.warnings.count, "path")) could not be read completely (see above)",
                                   valueRole: .warning))
            }
        }
        items.append(.init("Destination", state.destination))
        if let prune = state.prune {
            items.append(.init("Pruned", "removed \(Units.count(prune.removed.count, "backup")) (\(Units.bytes(prune.freedBytes))), "
                + "kept \(Units.count(prune.kept.count))"))
        } else if state.profile.retention == nil {
            items.append(.init("Pruned", "no retention policy; every backup is kept"))
        }
        if let report = state.verify {
            items.append(.init("Verified", report.isIntact ? "intact (\(VerifyReportText.checked(report)))" : "DAMAGED",
                valueRole: report.isIntact ? .success : .danger))
        }
        for copy in state.copies {
            items.append(.init("Copied", "to \(copy.destination): \(Units.count(copy.result.copied.count, "backup")), "
                + "\(Units.bytes(copy.result.bytes))"))
        }
        if let outcome = state.after { items.append(.init("After", outcome.description)) }
        return items
    }

    private func json(_ state: RunState) -> JSONValue {
        func hook(_ command: String?, _ outcome: HookRunner.Outcome?) -> JSONValue {
            guard let command, let outcome else { return .null }
            return .object(JSONObject([
                ("command", .string(command)),
                ("succeeded", .bool(outcome.succeeded)),
                ("exit_status", outcome.status.map { .int(Int64($0)) } ?? .null),
                ("outcome", .string(outcome.description)),
            ]))
        }
        var object = JSONObject([
            ("profile", .string(state.profile.name)),
            ("config", .string(state.config.path)),
            ("destination", .string(state.destination)),
            ("before", hook(state.profile.before, state.before)),
        ])
        // The same objects as `backup --json` and `prune --json` print (without exit_code).
        object["backup"] = state.backup.map { .object(BackupResultJSON.encode($0, destination: state.destination)) } ?? .null
        object["prune"] = state.prune.map { result in
            .object(PruneResultJSON.encode(result, destination: state.destination,
                                           policy: state.profile.retention?.description ?? ""))
        } ?? .null
        object["verify"] = state.verify.map(VerifyReportJSON.encode) ?? .null
        object["copies"] = .array(state.copies.map { copy in
            .object(CopyResultJSON.encode(copy.result, after: [("destination", .string(copy.destination))]))
        })
        object["after"] = hook(state.profile.after, state.after)
        object["errors"] = .array(state.errors.map { .string($0) })
        object["status"] = .string(state.succeeded ? "success" : "failure")
        object["exit_code"] = .int(Int64(state.code.rawValue))
        return .object(object)
    }

}

// MARK: - State

/// What a run has done so far, and the exit code it has earned.
private struct RunState {
    let profile: Profile
    let config: ConfigFile
    var destination = ""
    var before: HookRunner.Outcome?
    var backup: BackupResult?
    var prune: PruneResult?
    var verify: VerifyReport?
    var copies: [(destination: String, result: BackupCopier.Result)] = []
    var after: HookRunner.Outcome?
    /// Every error message, in order.
    var errors: [String] = []
    private(set) var code = ExitCode.success

    init(profile: Profile, config: ConfigFile) {
        self.profile = profile
        self.config = config
    }

    /// True while the backup is committed and verified, whatever warnings it had (exit 0 or 3).
    var succeeded: Bool { code == .success || code == .partial }

    /// Records an exit code; the most severe one stays.
    mutating func raise(_ candidate: ExitCode) {
        if Self.severity(candidate) > Self.severity(code) { code = candidate }
    }

    /// Records a failed step: its exit code, and its message on stderr (the run's own JSON
    /// document holds it with `--json`).
    mutating func fail(_ candidate: ExitCode, _ message: String, context: CommandContext) {
        raise(candidate)
        errors.append(message)
        context.report(ErrorReport(message, code: candidate), json: false)
    }

    /// 130 over 5 over 4 over 7 over 6 over 1 over 3 over 0.
    private static func severity(_ code: ExitCode) -> Int {
        switch code {
        case .success: return 0
        case .partial: return 1
        case .failure, .usage: return 2
        case .key: return 3
        case .signature: return 4
        case .integrity: return 5
        case .locked: return 6
        case .interrupted: return 7
        }
    }
}

// MARK: - Option keys

extension OptionKey {
    static let verbose = OptionKey("verbose")
}
