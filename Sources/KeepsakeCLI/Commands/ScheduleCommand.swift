import BackupCore
import Foundation
import KeepsakeConfig
import KeepsakeJSON
import TerminalUI

/// `keepsake schedule PROFILE`: prints a crontab line and a systemd user service + timer pair
/// that run `keepsake run PROFILE`, and with `--install` puts the line into the user's crontab.
struct ScheduleCommand: KeepsakeCommand {
    // MARK: Spec

    static let spec = CommandSpec(
        name: "schedule",
        abstract: "Print a crontab line and systemd timer units that run a profile (or install the crontab line).",
        discussion: "Give one of --hourly [MM], --daily HH:MM or --weekly DAY HH:MM. The lines call this keepsake binary by its absolute path with the absolute path of the configuration file, so they work from cron's bare environment. --install replaces any earlier crontab line of the profile (the one ending with '#\u{00A0}keepsake:PROFILE') with the new one; without cron, use the systemd units.",
        arguments: [
            ArgumentSpec(.profile, help: "The profile's name ([profiles.NAME] in the configuration file)."),
            ArgumentSpec(.time, help: "The minute for --hourly (default 0), or HH:MM for --weekly.", optional: true),
        ],
        options: [
            OptionSpec(.hourly, help: "Every hour, at minute TIME (default 0)."),
            OptionSpec(.daily, kind: .value(valueName: "HH:MM"), help: "Every day at this time."),
            OptionSpec(.weekly, kind: .value(valueName: "day"),
                       help: "Every week on this day (mon, tue, …, sun) at TIME (HH:MM)."),
            ProfileLoader.configOption,
            OptionSpec(.install, help: "Install the crontab line in your crontab (replacing the profile's earlier line)."),
        ] + CommonOptions.global,
        examples: [
            .init(command: "keepsake schedule home --daily 02:30", explanation: "Print the lines for a run every night at 02:30."),
            .init(command: "keepsake schedule home --hourly 15 --install", explanation: "Run every hour at :15, from your crontab."),
            .init(command: "keepsake schedule db --weekly sun 03:00", explanation: "Print the lines for a run every Sunday at 03:00."),
        ]
    )

    // MARK: Validated options

    private let profileName: String
    private let time: ScheduleTime
    private let configOption: String?
    private let install: Bool

    init(arguments: ParsedArguments, context: CommandContext) throws {
        var problems = UsageProblems(Self.spec)
        profileName = arguments.argument(.profile) ?? ""
        configOption = arguments.value(.config)
        install = arguments.flag(.install)
        var timeText = arguments.argument(.time)
        let forms = [arguments.flag(.hourly), arguments.value(.daily) != nil, arguments.value(.weekly) != nil]
        var parsed: ScheduleTime?
        if forms.filter({ $0 }).count != 1 {
            problems.add("Give one of '--hourly [MM]', '--daily HH:MM' or '--weekly DAY HH:MM'.")
        } else if arguments.flag(.hourly) {
            if let text = timeText {
                if let minute = ScheduleTime.minute(text) {
                    parsed = .hourly(minute: minute)
                } else {
                    problems.add("The minute '\(text)' for '--hourly' is invalid. Use a whole number from 0 to 59.")
                }
            } else {
                parsed = .hourly(minute: 0)
            }
        } else if let text = arguments.value(.daily) {
            if let extra = timeText {
                problems.add("Unexpected argument '\(extra)': '--daily' takes its time as its value ('--daily 02:30').")
            } else if let clock = ScheduleTime.clock(text) {
                parsed = .daily(hour: clock.hour, minute: clock.minute)
            } else {
                problems.add("The value '\(text)' is invalid for '--daily <HH:MM>'. Use a time from 00:00 to 23:59, e.g. '--daily 02:30'.")
            }
        } else if var dayText = arguments.value(.weekly) {
            // `--weekly "sun 02:30"` in one value works too.
            let words = dayText.split(separator: " ")
            if words.count == 2 && timeText == nil {
                dayText = String(words[0])
                timeText = String(words[1])
            }
            let day = ScheduleTime.day(dayText)
            if day == nil {
                problems.add("The value '\(dayText)' is invalid for '--weekly <day>'. Use mon, tue, wed, thu, fri, sat or sun.")
            }
            if let text = timeText {
                if let clock = ScheduleTime.clock(text) {
                    parsed = day.map { .weekly(day: $0, hour: clock.hour, minute: clock.minute) }
                } else {
                    problems.add("The time '\(text)' for '--weekly' is invalid. Use a time from 00:00 to 23:59, e.g. '--weekly sun 02:30'.")
                }
            } else {
                problems.add("Missing the time for '--weekly'. Give the day and the time, e.g. '--weekly sun 02:30'.")
            }
        }
        try problems.throwIfAny()
        guard let parsed else { throw UsageError.custom("Give the time of the runs.", command: Self.spec) }
        time = parsed
    }

    // MARK: Running

    func run(context: CommandContext) throws -> ExitCode {
        let (config, profile) = try ProfileLoader.load(profileName, configOption: configOption, context: context)
        let binary = Self.executablePath()
        let runArguments = [binary, "run", profile.name, "--config", config.path, "--quiet"]
        let marker = "# keepsake:\(profile.name)"
        let cronLine = "\(time.cronFields) \(runArguments.map(Self.cronQuoted).joined(separator: " ")) \(marker)"
        let unitName = "keepsake-\(profile.name)"
        let service = """
            [Unit]
            Description=Keepsake backup of profile \(profile.name)

            [Service]
            Type=oneshot
            ExecStart=\(runArguments.map(Self.systemdQuoted).joined(separator: " "))
            """
        let timer = """
            [Unit]
            Description=Keepsake backup of profile \(profile.name), \(time)

            [Timer]
            OnCalendar=\(time.onCalendar)
            Persistent=true

            [Install]
            WantedBy=timers.target
            """

        if profile.destination == nil, let dest = context.environment["KEEPSAKE_DEST"], !dest.isEmpty {
            context.warn("profile '\(profile.name)' has no 'destination', and cron and systemd do not pass on KEEPSAKE_DEST=\(dest); "
                + "set destination = \"\(dest)\" in the profile so the scheduled runs use it")
        }

        if context.json {
            context.printJSON(.object(JSONObject([
                ("profile", .string(profile.name)),
                ("config", .string(config.path)),
                ("schedule", .string(time.description)),
                ("crontab_line", .string(cronLine)),
                ("systemd_service", .object(JSONObject([("name", .string(unitName + ".service")), ("contents", .string(service + "\n"))]))),
                ("systemd_timer", .object(JSONObject([("name", .string(unitName + ".timer")), ("contents", .string(timer + "\n"))]))),
                ("exit_code", .int(0)),
            ])))
        } else if !context.quiet || !install {
            context.printLine("""
                # Crontab line (add it with 'crontab -e', or run this command again with --install):
                \(cronLine)

                # Or systemd user units: save the two files below in ~/.config/systemd/user/, then run
                #   systemctl --user daemon-reload && systemctl --user enable --now \(unitName).timer

                # ~/.config/systemd/user/\(unitName).service
                \(service)

                # ~/.config/systemd/user/\(unitName).timer
                \(timer)
                """)
        }

        guard install else { return .success }
        do {
            let editor = try CrontabEditor(environment: context.environment)
            let replaced = try editor.install(cronLine, marker: marker)
            context.note(replaced > 0 ? "Replaced the crontab line of profile '\(profile.name)': \(cronLine)"
                                      : "Installed in your crontab: \(cronLine)")
            return .success
        } catch {
            // The lines are printed (and with --json, their document): the error is told alone.
            return context.report(ErrorReport(error), json: false)
        }
    }

    // MARK: Paths and quoting

    /// The running binary's absolute path (`/proc/self/exe`), else `argv[0]` made absolute.
    static func executablePath() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if length > 0 {
            return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return DestinationResolver.absolute(CommandLine.arguments.first ?? "keepsake")
    }

    /// Whether a word needs no quoting for a shell (or systemd).
    private static func isPlain(_ word: String) -> Bool {
        !word.isEmpty && word.unicodeScalars.allSatisfy { scalar in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "/", ".", "_", "-", "+", ":", "@", ",", "=": return true
            default: return false
            }
        }
    }

    /// A word for a crontab command: shell-quoted, with `%` escaped (cron turns a bare `%`
    /// into a newline).
    static func cronQuoted(_ word: String) -> String {
        let quoted = isPlain(word) ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
        return quoted.replacingOccurrences(of: "%", with: "\\%")
    }

    /// A word for systemd's `ExecStart=`: double-quoted when needed, with `%` and `$` doubled.
    static func systemdQuoted(_ word: String) -> String {
        let escaped = word.replacingOccurrences(of: "%", with: "%%").replacingOccurrences(of: "$", with: "$$")
        guard !isPlain(word) else { return escaped }
        return "\"" + escaped.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

// MARK: - Option keys

extension OptionKey {
    static let daily = OptionKey("daily")
    static let hourly = OptionKey("hourly")
    static let install = OptionKey("install")
    static let weekly = OptionKey("weekly")
}

// MARK: - Arguments

extension ArgumentKey {
    /// The minute for `--hourly`, or `HH:MM` for `--weekly`.
    static let time = ArgumentKey("TIME")
}
