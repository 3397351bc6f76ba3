import BackupCore
import Glibc
import KeepsakeSupport

// MARK: - CommandLineArgument

/// One argument as the kernel handed it over: its bytes, and the text the parser reads.
///
/// `CommandLine.arguments` repairs invalid UTF-8 into U+FFFD, and a Linux path may hold
/// any byte but `/` and NUL, so a folder named with a Latin-1 `ÿ` (byte 0xff) could not be
/// backed up or restored into. Arguments therefore arrive as bytes; paths keep them, and
/// everything else must be valid UTF-8 (the parser says so, naming the argument).
struct CommandLineArgument: Sendable, Hashable {

    // MARK: Properties

    /// The argument exactly as given.
    let bytes: [UInt8]
    /// The argument as text: exact when it is valid UTF-8, otherwise shown as
    /// `PathBytes.display` shows it (`\xff`), for parsing and messages. Only ASCII
    /// (`-`, `=`) carries meaning to the parser, and the display keeps ASCII as it is.
    let text: String
    /// Whether `bytes` is valid UTF-8 (then `text` holds exactly those bytes).
    let isValidUTF8: Bool

    // MARK: Init

    /// An argument given as bytes.
    init(bytes: [UInt8]) {
        self.bytes = bytes
        if let text = PathBytes.validString(bytes) {
            self.text = text
            isValidUTF8 = true
        } else {
            text = PathBytes.display(bytes)
            isValidUTF8 = false
        }
    }

    /// An argument given as text (tests, and values built by the program).
    init(_ text: String) {
        bytes = Array(text.utf8)
        self.text = text
        isValidUTF8 = true
    }

    /// The part after the first `=` of `--name=value`, as its own argument, or nil when
    /// there is no `=`.
    var inlineValue: CommandLineArgument? {
        guard let equals = bytes.firstIndex(of: UInt8(ascii: "=")) else { return nil }
        return CommandLineArgument(bytes: Array(bytes[(equals + 1)...]))
    }

    // MARK: The process's own

    /// The process's arguments after the program name, read as bytes from `argv`.
    static func processArguments() -> [CommandLineArgument] {
        let count = Int(CommandLine.argc)
        guard count > 1 else { return [] }
        return (1..<count).map { index in
            CommandLineArgument(bytes: PathBytes.fromCString(CommandLine.unsafeArgv[index]) ?? [])
        }
    }
}
