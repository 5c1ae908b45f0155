import PlainWords

/// The first argument of a command line that names no subcommand: the default command (the
/// dashboard) takes files and folders, so a word that is no existing path and looks like a
/// mistyped command (close to a command's name), or has no shape of a path at all, is a usage
/// error that names the commands, not a file the dashboard cannot read.
public enum UnknownCommand {
    /// Why `argument` (the first argument) is a usage error, or nil when it is an option, a
    /// command, an existing path (`exists`) or shaped like a path (a `/`, a `.`, `~`, `-`).
    /// The words hold `argument` as typed: say them through `Console.error`, which escapes.
    /// - Parameter commands: the subcommands' names.
    public static func problem(_ argument: String, commands: [String], exists: (String) -> Bool) -> String? {
        if argument.hasPrefix("-") || commands.contains(argument) || argument == "help" || exists(argument) { return nil }
        let guess = NearestWord.closest(to: argument, in: commands)
        let pathShaped = argument.contains("/") || argument.contains(".") || argument.hasPrefix("~") || argument.isEmpty
        if guess == nil && pathShaped { return nil }
        let named = "'\(argument)'"
        let start = guess.map { "no command \(named); did you mean `receiptdash \($0)`?" } ?? "no command or file \(named)."
        return "\(start) The commands are listed by `receiptdash --help`; to open a file of that name, write ./\(argument)."
    }
}
