import Glibc
import SwitchDaemon
import SwitchSystem

reserveStandardDescriptors()
exit(Daemon.main(Array(processArguments().dropFirst()), argumentNotUTF8: firstArgumentNotUTF8()))
