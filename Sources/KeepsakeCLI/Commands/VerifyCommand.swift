import BackupCore
import Foundation
import TerminalUI

/// `keepsake verify`: proves backups intact, or names what is damaged.
struct VerifyCommand: KeepsakeCommand {
    // MARK: Spec

    static let spec = CommandSpec(
        name: "verify",
        abstract: "Check that backups are intact: every file's SHA-256 and the archive's own.",
        discussion: "Decompresses each archive completely, checks every file against the manifest, that every file in the manifest is present, and the archive's size and SHA-256 recorded when it was stored. Exit 4 names each damaged backup and, where possible, the damaged files.",
        arguments: [ArgumentSpec(name: "BACKUP", help: "Backup ids, unique prefixes, 'latest', or archive files; all backups when none.",
                                 optional: true, repeating: true)],
        options: [CommonOptions.dest, CommonOptions.progress] + CommonOptions.global,
        examples: [
            .init(command: "keepsake verify", explanation: "Verify every backup in the default destination."),
            .init(command: "keepsake verify latest --dest /mnt/usb/backups", explanation: "Verify the newest backup on a USB disk."),
        ]
    )

    private let references: [String]
    private let destinationOption: String?
    private let progress: Bool

    init(arguments: ParsedArguments, context: CommandContext) throws {
        references = arguments.positionals
        destinationOption = arguments.value("dest")
        progress = arguments.flag("progress")
    }

    // MARK: Running

    func run(context: CommandContext) throws -> ExitCode {
        let storage = context.destination(destinationOption)
        let catalog = BackupCatalog(storage: storage)
        let presenter = EventPresenter(context: context, progress: progress)
        let verifier = Verifier(events: presenter, cancellation: context.cancellation)
        var reports: [VerifyReport] = []
        if references.isEmpty {
            let items = try catalog.items()
            if items.isEmpty && !context.json {
                context.note("No backups in \(storage.location) to verify.")
            }
            for item in items {
                reports.append(try verifier.verify(item, in: storage))
                presenter.finish()
                if !context.json { show(reports[reports.count - 1], context: context) }
            }
        } else {
            for argument in references {
                let report: VerifyReport
                switch try BackupReference.resolve(argument, explicitDestination: destinationOption != nil, context: context) {
                case .archiveFile(let reference):
                    let source = try FileByteSource(path: reference)
                    defer { source.close() }
                    report = try verifier.verify(archive: source, name: reference,
                                                 sidecar: ArchiveFileInspector.sidecarData(forArchiveAt: reference))
                case .backup(let reference):
                    report = try verifier.verify(try catalog.resolve(reference), in: storage)
                }
                presenter.finish()
                reports.append(report)
                if !context.json { show(report, context: context) }
            }
        }
        let damaged = reports.filter { !$0.isIntact }
        let code: ExitCode = damaged.isEmpty ? .success : .integrity
        if context.json {
            context.printJSON(.object(JSONObject([
                ("destination", .string(storage.location)),
                ("intact", .int(Int64(reports.count - damaged.count))),
                ("damaged", .int(Int64(damaged.count))),
                ("backups", .array(reports.map(VerifyReportJSON.encode))),
                ("exit_code", .int(Int64(code.rawValue))),
            ])))
        } else if !context.quiet && !reports.isEmpty {
            let line = "Verified \(reports.count) backup(s): \(reports.count - damaged.count) intact, \(damaged.count) damaged."
            context.printLine(context.out.apply(damaged.isEmpty ? .success : .danger, to: line))
        }
        return code
    }

    // MARK: Output

    private func show(_ report: VerifyReport, context: CommandContext) {
        let name = report.id?.rawValue ?? report.name
        var details = "\(Units.count(Int(report.filesChecked), "file")), \(Units.bytes(report.bytesChecked))"
        if report.filesInEarlierArchives > 0 {
            details += "; \(Units.count(Int(report.filesInEarlierArchives))) more in earlier backups"
        }
        if report.isIntact {
            guard !context.quiet else { return }
            let badge = Badge("OK", role: .success, emphasis: .small).text(in: context.out)
            context.printLine("\(badge) \(name)  \(context.out.apply(.muted, to: details))")
            return
        }
        let label = report.unverifiable ? "UNVERIFIABLE" : "DAMAGED"
        var lines = ["\(Badge(label, role: .danger, emphasis: .small).text(in: context.out)) \(name)"]
        lines.append(contentsOf: report.archiveProblems.map { "  \($0)" })
        for problem in report.problems.prefix(50) { lines.append("  \(problem.path): \(problem.reason)") }
        if report.problems.count > 50 { lines.append("  … and \(report.problems.count - 50) more") }
        if report.unverifiable { lines.append("  no manifest in this archive to check against") }
        for line in lines { context.printLine(line) }
    }

}
