import BackupCore
import Foundation
import KeepsakeJSON
import KeepsakeModel
import TerminalUI

/// `keepsake repair`: rebuilds lost or damaged manifests from the archives' own copies.
struct RepairCommand: KeepsakeCommand {
    // MARK: Spec

    static let spec = CommandSpec(
        name: "repair",
        abstract: "Rebuild manifests that are missing or damaged from the archives' own copies.",
        discussion: "Every archive carries its manifest as its last entry. When the copy beside the archive is missing, unreadable, or names another backup, repair reads the archive whole, measures its size and SHA-256, and writes the manifest beside it again. A manifest that reads fine is never touched. Exit 4 when an archive's own manifest cannot be read either.",
        arguments: [ArgumentSpec(.backup, help: "Backup ids or unique prefixes to check; all archives when none.",
                                 optional: true, repeating: true)],
        options: DestinationSelection.options + CommonOptions.global,
        examples: [
            .init(command: "keepsake repair", explanation: "Check every archive's manifest and rebuild the ones that need it."),
        ]
    )

    private let references: [String]
    private let destinationOption: String?

    init(arguments: ParsedArguments, context: CommandContext) throws {
        references = arguments.arguments(.backup)
        destinationOption = try DestinationSelection.resolve(arguments, context: context, opensBackups: false).destination
    }

    // MARK: Running

    func run(context: CommandContext) throws -> ExitCode {
        let storage = try context.destination(destinationOption)
        let repairer = ManifestRepairer(storage: storage, keyring: context.keyring, cancellation: context.cancellation)
        let outcomes = try repairer.repair(references, events: EventPresenter(context: context, progress: false))
        let failed = outcomes.filter { $0.kind == .unrecoverable }
        let code: ExitCode = failed.isEmpty ? .success : .integrity
        if context.json {
            context.printJSON(.object(JSONObject([
                ("destination", .string(storage.location)),
                ("repairs", .array(outcomes.map { outcome in
                    .object(JSONObject([
                        ("id", .string(outcome.id.rawValue)),
                        ("archive", .string(outcome.archiveName)),
                        ("result", .string(outcome.kind.rawValue)),
                        ("reason", .string(outcome.reason)),
                    ]))
                })),
                ("exit_code", .int(Int64(code.rawValue))),
            ])))
            return code
        }
        for outcome in outcomes {
            let badge = outcome.kind == .rebuilt ? Badge("REBUILT", role: .success, emphasis: .small)
                : Badge("UNRECOVERABLE", role: .danger, emphasis: .small)
            context.printLine("\(badge.text(in: context.out)) \(outcome.id.rawValue)  \(outcome.archiveName): \(outcome.reason)")
        }
        if !context.quiet {
            if outcomes.isEmpty {
                context.printLine("Every manifest in \(storage.location) is intact; nothing to repair.")
            } else {
                context.printLine("Rebuilt \(Units.count(outcomes.count - failed.count, "manifest")); \(failed.count) could not be rebuilt.")
            }
        }
        return code
    }
}
