/// Configuration directories for the daemons the benchmark starts.
///
/// Keys: `wifi` (the key every `get`, fan-out and CLI figure uses),
/// `toggle.c<N>` (one per writing client, so writers do not share a row),
/// and `g<group>.s<digit>` filler in groups of ten, so a prefix `g00042.`
/// lists exactly ten switches however many exist.
enum Configs {
  static let togglers = 64

  /// The filler key number `index` (groups of ten).
  static func fillerKey(_ index: Int) -> String {
    let group = String(index / 10)
    return "g" + String(repeating: "0", count: max(0, 5 - group.count)) + group + ".s\(index % 10)"
  }

  /// How many filler keys a config of `total` switches holds.
  static func fillerCount(total: Int) -> Int { max(0, total - 1 - togglers) }

  /// The user-scope key number `index` (< 100), in groups of ten: `u4.s2`,
  /// so a prefix `u4.` lists exactly ten.
  static func userKey(_ index: Int) -> String { "u\(index / 10).s\(index % 10)" }

  /// The key number `index` of a switch that conflicts with
  /// `airplane-mode` (`Conflicts=`), as Wi-Fi does in the shipped files.
  static func radioKey(_ index: Int) -> String { "radio.c\(index)" }

  /// Writes `directory` with switchd.conf and `total` switches, and
  /// `userScoped` more of `Scope=user` (`userKey`), and `conflicting` more
  /// that conflict with an `airplane-mode` switch (`radioKey`, and it).
  static func write(
    _ directory: String, total: Int, userScoped: Int = 0, conflicting: Int = 0
  ) throws {
    try makeDirectory(directory)
    try makeDirectory("\(directory)/switches.d")
    try makeDirectory("\(directory)/policy.d")
    try writeFile(
      "\(directory)/switchd.conf",
      """
      # Written by switchbench.
      [Daemon]
      AdminGroup=
      SocketMode=0600
      MaxConnections=16384
      HistoryRetention=10000000
      LogLevel=warning

      """)
    var text = """
      [wifi]
      Label=Wi-Fi
      Description=Connect to wireless networks.
      Default=on
      CheckedIcon=wifi
      UncheckedIcon=wifi_off

      """
    text.reserveCapacity(total * 48)
    for client in 0..<togglers {
      text += "[toggle.c\(client)]\nLabel=Benchmark writer \(client)\nDefault=off\n\n"
    }
    for index in 0..<fillerCount(total: total) {
      text += "[\(fillerKey(index))]\nLabel=Benchmark switch \(index)\nDefault=off\n\n"
    }
    for index in 0..<userScoped {
      text +=
        "[\(userKey(index))]\nLabel=Benchmark user switch \(index)\nDefault=off\nScope=user\n\n"
    }
    if conflicting > 0 {
      text += "[airplane-mode]\nLabel=Airplane mode\nDefault=off\n\n"
    }
    for index in 0..<conflicting {
      text +=
        "[\(radioKey(index))]\nLabel=Benchmark radio \(index)\nDefault=on\n"
        + "Conflicts=airplane-mode\n\n"
    }
    try writeFile("\(directory)/switches.d/10-bench.conf", text)
  }
}
