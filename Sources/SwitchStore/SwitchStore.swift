// SwitchStore
