print("fuzz-keyfile: build with -Xswiftc -DFUZZING")
