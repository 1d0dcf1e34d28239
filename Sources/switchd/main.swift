import Glibc
import SwitchDaemon
import SwitchSystem

exit(Daemon.main(Array(processArguments().dropFirst())))
