print("switchbench: not written yet")
