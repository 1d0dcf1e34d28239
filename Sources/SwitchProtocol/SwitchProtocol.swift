// SwitchProtocol
