import Glibc
import KeepsakeCLI

exit(KeepsakeCLI.main(Array(CommandLine.arguments.dropFirst())))
