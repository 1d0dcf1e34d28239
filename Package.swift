// swift-tools-version:6.0
// switchd: a system service that keeps boolean settings with the rules of a UI switch.
import PackageDescription

// The request path's hot code skips Swift's run-time exclusivity checks in
// release builds (a tenth of a `get`'s instructions, measured with
// callgrind); debug builds, which every test and sanitizer run uses, keep
// them, so a violation still fails the tests. Cross-module optimization
// lets the daemon inline and specialize the small functions of SwitchCore,
// SwitchProtocol and SwitchStore it calls per request (~250 instructions of
// a toggle's ~22k, callgrind, issue 26). `-disable-type-layout`: without
// it the compiler copies and destroys a struct such as SwitchState (a few
// flags and one reference) through its type's value-witness table, an
// indirect call and three jumps each time, ~11 times a toggle; with it the
// copy is the loads and the retain (~0.6k of a toggle's ~21k, callgrind).
let releaseSpeed: [SwiftSetting] = [
  .unsafeFlags(
    [
      "-enforce-exclusivity=unchecked", "-cross-module-optimization", "-Xfrontend",
      "-disable-type-layout",
    ], .when(configuration: .release)
  )
]

// The C targets' debug information in DWARF 4, as Swift's: valgrind 3.19
// (Debian 12), under which switchbench counts instructions, reads clang's
// default DWARF 5 only in part and gives up on a binary with two such units.
let cDebugInfo: [CSetting] = [.unsafeFlags(["-gdwarf-4"])]

// The Swift standard library and runtime linked into the executable, by
// the toolchain's lld with its relative relocations packed (DT_RELR, glibc
// 2.36+): gold wrote 21,754 of them as a 510 KiB table that the loader
// reads at every start, and whose pages stayed resident; packed, 4 KiB
// (switchd's peak RSS with 10,000 switches ~0.4 MiB lower, issue 26).
let staticStdlib: [LinkerSetting] = [
  .unsafeFlags([
    "-static-stdlib", "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
  ])
]

let package = Package(
  name: "switchd",
  products: [
    .executable(name: "switchd", targets: ["switchd"]),
    .executable(name: "switchctl", targets: ["switchctl"]),
  ],
  targets: [
    .systemLibrary(
      name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
    // sd-bus, for the one D-Bus call switchd makes (polkit's CheckAuthorization):
    // the library loaded when first needed; its header (libsystemd-dev), when installed,
    // checks the function types at build time.
    .target(name: "CSystemd", cSettings: cDebugInfo, linkerSettings: [.linkedLibrary("dl")]),
    .target(name: "CShim", cSettings: cDebugInfo),
    // The SQLite VFS the store opens its files through: unix-excl, with
    // each WAL frame written in one system call.
    .target(name: "CSQLiteVFS", dependencies: ["CSQLite"], cSettings: cDebugInfo),
    // The thin layer over Glibc shared by the daemon and switchctl.
    .target(name: "SwitchSystem", dependencies: ["CShim"]),
    .target(name: "SwitchCore", swiftSettings: releaseSpeed),
    // The varlink interface definition is one file, shipped as it is and
    // embedded in the code that serves it (`PackageResources`, no Foundation).
    .target(
      name: "SwitchProtocol", dependencies: ["SwitchCore"],
      resources: [.embedInCode("io.switchd.Switches.varlink")], swiftSettings: releaseSpeed),
    .target(
      name: "SwitchStore", dependencies: ["SwitchCore", "CSQLite", "CSQLiteVFS"],
      swiftSettings: releaseSpeed),
    // Asking polkit over the system bus (Authorization=polkit); only the daemon links it.
    .target(name: "SwitchPolkit", dependencies: ["CSystemd"]),
    .target(
      name: "SwitchDaemon",
      dependencies: [
        "SwitchCore", "SwitchProtocol", "SwitchStore", "SwitchSystem", "SwitchPolkit", "CShim",
      ],
      swiftSettings: releaseSpeed),
    .target(
      name: "SwitchCtl", dependencies: ["SwitchCore", "SwitchProtocol", "SwitchSystem", "CShim"]),
    // A fixed-seed generator for test data and benchmark load (not in any product).
    .target(name: "SeededRandom"),
    // Both binaries link the Swift runtime statically: they then need only
    // the C library and libsqlite3, so they run (and package) on a machine
    // without the Swift toolchain, and switchctl, which scripts call in
    // loops, starts in half the time (SWIFT-NOTES.md, "CLI start-up").
    .executableTarget(
      name: "switchd", dependencies: ["SwitchDaemon", "SwitchSystem"],
      linkerSettings: staticStdlib),
    .executableTarget(
      name: "switchctl", dependencies: ["SwitchCtl", "SwitchSystem"],
      linkerSettings: staticStdlib),
    // The benchmark: `swift run -c release switchbench` (see README).
    .executableTarget(
      name: "switchbench",
      dependencies: ["SwitchProtocol", "SwitchCore", "SwitchSystem", "CSQLite", "SeededRandom"],
      path: "Benchmarks/switchbench"),
    // libFuzzer targets; they do nothing unless built with -DFUZZING (see .ci/fuzz).
    .executableTarget(
      name: "fuzz-protocol", dependencies: ["SwitchCore", "SwitchProtocol"],
      path: "Fuzz/fuzz-protocol"),
    .executableTarget(
      name: "fuzz-keyfile", dependencies: ["SwitchCore"], path: "Fuzz/fuzz-keyfile"),
    // What the test targets share (in no product): the one process spawner
    // (`Child`, `runProcess`), daemon fixture, poll helper, temp directories
    // and small file helpers.
    .target(
      name: "SwitchTestSupport", dependencies: ["SwitchProtocol", "SwitchSystem"],
      path: "Tests/SwitchTestSupport"),
    .testTarget(name: "SwitchCoreTests", dependencies: ["SwitchCore", "SeededRandom"]),
    .testTarget(name: "SwitchProtocolTests", dependencies: ["SwitchProtocol", "SeededRandom"]),
    .testTarget(
      name: "SwitchStoreTests", dependencies: ["SwitchStore", "SeededRandom", "SwitchTestSupport"]),
    .testTarget(name: "SwitchSystemTests", dependencies: ["SwitchSystem", "SwitchTestSupport"]),
    .testTarget(
      name: "SwitchDaemonTests",
      dependencies: ["SwitchDaemon", "SwitchCore", "SwitchSystem", "SwitchTestSupport"]),
    .testTarget(name: "SwitchCtlTests", dependencies: ["SwitchCtl", "SwitchTestSupport"]),
    // Starts the real switchd and switchctl, which `swift test` builds
    // beside the test runner (all products are built with the tests).
    .testTarget(
      name: "EndToEndTests",
      dependencies: [
        "SwitchProtocol", "SwitchCore", "SwitchSystem", "SeededRandom", "SwitchTestSupport",
      ]),
  ],
  swiftLanguageModes: [.v6]
)
