import BackupCore
import Foundation
import KeepsakeConfig
import KeepsakeJSON
import KeepsakeSigning
import TerminalUI

/// `keepsake verify`: proves backups intact, or names what is damaged.
struct VerifyCommand: KeepsakeCommand {
    // MARK: Spec

    static let spec = CommandSpec(
        name: "verify",
        abstract: "Check that backups are intact: every file's SHA-256 and the archive's own.",
        discussion: "Decompresses each archive completely, checks every file against the manifest, that every file in the manifest is present, and the archive's size and SHA-256 recorded when it was stored. Exit 4 names each damaged backup and, where possible, the damaged files. With --signed-by, each backup must also be signed by that key and unchanged since (exit 7 names those that are not, when none is damaged).",
        arguments: [ArgumentSpec(.backup, help: "Backup ids, unique prefixes, 'latest', or archive files; all backups when none.",
                                 optional: true, repeating: true)],
        options: DestinationSelection.options + [CommonOptions.progress] + KeyOptions.reading + [SigningOptions.signedBy]
            + CommonOptions.global,
        examples: [
            .init(command: "keepsake verify", explanation: "Verify every backup in the default destination."),
            .init(command: "keepsake verify latest --dest /mnt/usb/backups", explanation: "Verify the newest backup on a USB disk."),
        ]
    )

    private let references: [String]
    private let destinationOption: String?
    private let progress: Bool
    /// `--signed-by` (or the profile's `signed-by`): the key every backup must be signed by.
    private let signedBy: SigningPublicKey?

    init(arguments: ParsedArguments, context: CommandContext) throws {
        let selection = try DestinationSelection.resolve(arguments, context: context)
        destinationOption = selection.destination
        references = arguments.arguments(.backup)
        progress = arguments.flag(.progress)
        signedBy = try SigningOptions.signedBy(arguments, profile: selection.profile?.signing ?? Profile.SigningSettings())
    }

    // MARK: Running

    func run(context: CommandContext) throws -> ExitCode {
        let presenter = EventPresenter(context: context, progress: progress)
        let verifier = Verifier(events: presenter, cancellation: context.cancellation)
        verifier.signatureCheck = signedBy.map(SignatureCheck.init(key:))
        var reports: [VerifyReport] = []
        // Archive files alone need no destination.
        let backups = references.isEmpty ? try context.locator(destinationOption).all()
            : try references.map { try context.locate($0, destinationOption: destinationOption) }
        // The destination, opened once for the damage notes and the messages, and only when
        // they need it (archive files alone need none); locating a backup there opened it already.
        let inDestination = backups.contains { !$0.isArchiveFile }
        let destination = inDestination || references.isEmpty || context.json ? try? context.destination(destinationOption) : nil
        // Damage found in the destination is noted there, under its lock (never beside an
        // archive file, which is only read).
        if inDestination { verifier.damageRecords = destination }
        if references.isEmpty && backups.isEmpty && !context.json, let destination {
            context.note("No backups in \(destination.location) to verify.")
        }
        for backup in backups {
            let report = try verifier.verify(backup)
            presenter.finish()
            reports.append(report)
            if !context.json { show(report, context: context) }
        }
        let damaged = reports.filter { !$0.isIntact }
        let unsigned = reports.filter { $0.signatureProblem != nil }
        // Damage first: a damaged backup must be dealt with whoever signed it.
        let code: ExitCode = !damaged.isEmpty ? .integrity : unsigned.isEmpty ? .success : .signature
        if context.json {
            context.printJSON(.object(JSONObject([
                ("destination", destination.map { .string($0.location) } ?? .null),
                ("intact", .int(Int64(reports.count - damaged.count))),
                ("damaged", .int(Int64(damaged.count))),
                ("signed_by", signedBy.map { .string($0.encoded) } ?? .null),
                ("not_signed", .int(Int64(unsigned.count))),
                ("backups", .array(reports.map(VerifyReportJSON.encode))),
                ("exit_code", .int(Int64(code.rawValue))),
            ])))
        } else if !context.quiet && !reports.isEmpty {
            showSummary(reports, destination: inDestination ? destination?.location : nil,
                        context: context)
        }
        return code
    }

    // MARK: Output

    /// The outcome of every backup: on a terminal the shared summary card under a badge,
    /// piped one greppable line.
    private func showSummary(_ reports: [VerifyReport], destination: String?, context: CommandContext) {
        let damaged = reports.filter { !$0.isIntact }.count
        let unsigned = signedBy == nil ? nil : reports.filter { $0.signatureProblem != nil }.count
        let signedPart = unsigned.map { "; \(reports.count - $0) signed by \(signedBy?.encoded ?? ""), \($0) not" } ?? ""
        let allWell = damaged == 0 && (unsigned ?? 0) == 0
        guard context.capabilities.stdoutIsTTY else {
            let line = "Verified \(Units.count(reports.count, "backup")): \(reports.count - damaged) intact, \(damaged) damaged\(signedPart)."
            context.printLine(context.out.apply(allWell ? .success : .danger, to: line))
            return
        }
        let files = reports.reduce(Int64(0)) { $0 + $1.filesChecked }
        let bytes = reports.reduce(Int64(0)) { $0 + $1.bytesChecked }
        var items: [KeyValueList.Item] = []
        if let destination { items.append(.init("Destination", destination)) }
        items.append(.init("Backups", "\(reports.count - damaged) intact, \(damaged) damaged",
                           valueRole: damaged == 0 ? .success : .danger))
        let unread = reports.contains { $0.contentsUnchecked }
        items.append(.init("Checked", "\(Units.count(Int(files), "file")), \(Units.bytes(bytes))"
            + (unread ? "; encrypted contents not read (give --identity)" : ", each against its SHA-256")))
        if let unsigned, let signedBy {
            items.append(.init("Signed", "\(reports.count - unsigned) by \(signedBy.encoded), \(unsigned) not",
                               valueRole: unsigned == 0 ? .success : .danger))
        }
        let badge = damaged > 0 ? Badge("DAMAGED", role: .danger)
            : allWell ? Badge("INTACT", role: .success) : Badge("NOT SIGNED", role: .danger)
        context.print(Stack([badge, context.summaryCard(title: "Verify", content: [KeyValueList(items: items)])]))
    }

    private func show(_ report: VerifyReport, context: CommandContext) {
        let name = report.id?.rawValue ?? report.name
        let details = VerifyReportText.checked(report)
        if report.isIntact && report.signatureProblem == nil {
            guard !context.quiet else { return }
            let badge = Badge("OK", role: .success, emphasis: .small).text(in: context.out)
            context.printLine("\(badge) \(name)  \(context.out.apply(.muted, to: details))")
            return
        }
        let label = report.unverifiable ? "UNVERIFIABLE" : report.isIntact ? "NOT SIGNED" : "DAMAGED"
        var lines = ["\(Badge(label, role: .danger, emphasis: .small).text(in: context.out)) \(name)"]
        if let problem = report.signatureProblem { lines.append("  \(problem)") }
        lines.append(contentsOf: report.archiveProblems.map { "  \($0)" })
        for problem in report.problems.prefix(50) { lines.append("  \(problem.path): \(problem.reason)") }
        if report.problems.count > 50 { lines.append("  … and \(report.problems.count - 50) more") }
        if report.unverifiable { lines.append("  no manifest in this archive to check against") }
        for line in lines { context.printLine(line) }
    }

}
