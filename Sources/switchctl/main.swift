print("switchctl")
