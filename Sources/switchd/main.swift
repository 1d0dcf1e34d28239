print("switchd")
