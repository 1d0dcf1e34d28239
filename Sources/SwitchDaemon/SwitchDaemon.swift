// SwitchDaemon
