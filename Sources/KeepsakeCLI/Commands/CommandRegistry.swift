/// Every command, in the order `keepsake --help` lists them.
enum CommandRegistry {
    /// The command types.
    static let all: [any KeepsakeCommand.Type] = [
        BackupCommand.self, ListCommand.self, RestoreCommand.self, VerifyCommand.self, PruneCommand.self, CopyCommand.self, RepairCommand.self, DiffCommand.self, FindCommand.self, RunCommand.self, ScheduleCommand.self, KeygenCommand.self, CompletionsCommand.self,
        HelpCommand.self,
    ]

    /// The command named `name`.
    static func command(named name: String) -> (any KeepsakeCommand.Type)? {
        all.first { $0.spec.name == name }
    }
}
