import Glibc
import SwitchCtl
import SwitchSystem

reserveStandardDescriptors()
exit(SwitchCtl.main(Array(processArguments().dropFirst()), argumentNotUTF8: firstArgumentNotUTF8()))
