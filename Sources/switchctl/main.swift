import Glibc
import SwitchCtl

exit(SwitchCtl.main(Array(CommandLine.arguments.dropFirst())))
