import Glibc
import SwitchCtl
import SwitchSystem

exit(SwitchCtl.main(Array(processArguments().dropFirst())))
