import Glibc
import SwitchDaemon

exit(Daemon.main(Array(CommandLine.arguments.dropFirst())))
