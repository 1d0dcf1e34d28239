// SwitchCtl
