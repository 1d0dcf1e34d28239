print("fuzz-protocol: build with -Xswiftc -DFUZZING")
