// fuzz-keyfile: a libFuzzer target for the configuration reader: KeyFile
// (the keyfile syntax) and CatalogBuilder (switchd.conf, switches.d,
// policy.d). Configuration is root's, but `reload` and every start read it,
// and a mistake in a file must give a diagnostic, never a crash.
//
// The input is split at 0xFF bytes (never valid UTF-8, so never part of a
// real file) into up to three files: switches.d/10-base.conf,
// policy.d/50-corp.conf, switchd.conf.
//
// Without -DFUZZING this is a stub that says how to build it; `.ci/fuzz.sh`
// builds it with `-DFUZZING` and libFuzzer plus AddressSanitizer in its own
// scratch directory and runs it on a copy of Fuzz/corpus/keyfile.

#if FUZZING
  import SwitchCore

  private let switchesName = "switches.d/10-base.conf"
  private let policyName = "policy.d/50-corp.conf"

  /// libFuzzer's entry point. SwiftPM's `--sanitize fuzzer` compiles this
  /// file as a library (no top-level code) and links libFuzzer's `main`.
  @_cdecl("LLVMFuzzerTestOneInput")
  public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input: [UInt8] =
      size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    let pieces = input.split(separator: 0xFF, maxSplits: 2, omittingEmptySubsequences: false)
    // As the daemon reads a file: bytes that are not UTF-8 become U+FFFD.
    let texts = pieces.map { String(decoding: $0, as: UTF8.self) }
    let switches = texts[0]
    let policy = texts.count > 1 ? texts[1] : nil
    let daemonConf = texts.count > 2 ? texts[2] : nil

    var lineCounts: [String: Int] = [switchesName: lineCount(switches)]
    var order = [switchesName]
    if let policy {
      lineCounts[policyName] = lineCount(policy)
      order.append(policyName)
    }
    if let daemonConf {
      lineCounts[CatalogBuilder.daemonConfName] = lineCount(daemonConf)
      order.insert(CatalogBuilder.daemonConfName, at: 0)
    }

    for (name, text) in [(switchesName, switches), (policyName, policy ?? "")] {
      checkKeyFile(text, name: name)
    }

    let sources = ConfigSources(
      daemonConf: daemonConf, switchFiles: [(name: switchesName, text: switches)],
      policyFiles: policy.map { [(name: policyName, text: $0)] } ?? [])
    let (catalog, diagnostics) = CatalogBuilder.build(sources)

    let hasError = diagnostics.contains { $0.severity == .error }
    check((catalog != nil) == !hasError, "a catalog must come exactly when there is no error")
    var previous: (file: Int, line: Int) = (0, 0)
    for diagnostic in diagnostics {
      let file = diagnostic.location.file
      guard let lines = lineCounts[file], let index = order.firstIndex(of: file) else {
        fatalError("fuzz-keyfile invariant: a diagnostic names an unknown file: \(diagnostic)")
      }
      check(
        (1...lines).contains(diagnostic.location.line),
        "diagnostic line outside its file (\(lines) lines): \(diagnostic)")
      check(!diagnostic.message.isEmpty, "a diagnostic without a message")
      check(
        (index, diagnostic.location.line) >= previous, "diagnostics are not in file order")
      previous = (index, diagnostic.location.line)
    }
    if let catalog { checkCatalog(catalog, lineCounts: lineCounts) }
    return 0
  }

  private func check(_ condition: Bool, _ what: @autoclosure () -> String) {
    if !condition { fatalError("fuzz-keyfile invariant: \(what())") }
  }

  /// Lines as the parser counts them: split at LF, so `n` newlines make n+1 lines.
  private func lineCount(_ text: String) -> Int {
    1 + text.unicodeScalars.reduce(0) { $0 + ($1 == "\n" ? 1 : 0) }
  }

  /// The syntax layer alone: sections and entries in file order, on real
  /// lines, with trimmed names; each diagnostic on a real line.
  private func checkKeyFile(_ text: String, name: String) {
    let (keyFile, diagnostics) = KeyFile.parse(text, file: name)
    let lines = lineCount(text)
    var last = 0
    for section in keyFile.sections {
      check(section.line > last && section.line <= lines, "section line out of order or range")
      check(!section.name.isEmpty, "a section with an empty name")
      last = section.line
      for entry in section.entries {
        check(entry.line > last && entry.line <= lines, "entry line out of order or range")
        check(!entry.name.isEmpty, "an entry with an empty name")
        check(!entry.name.contains("="), "an entry name holds '='")
        for text in [entry.name, entry.value] {
          check(text.unicodeScalars.first.map(isSpace) != true, "untrimmed text")
          check(text.unicodeScalars.last.map(isSpace) != true, "untrimmed text")
          check(!text.unicodeScalars.contains("\n"), "a value spans lines")
        }
        last = entry.line
      }
    }
    for diagnostic in diagnostics {
      check(diagnostic.location.file == name, "a syntax diagnostic names another file")
      check((1...lines).contains(diagnostic.location.line), "a syntax diagnostic off the file")
    }
  }

  private func isSpace(_ scalar: Unicode.Scalar) -> Bool {
    scalar == " " || scalar == "\t" || scalar == "\r" || scalar == "\u{0B}" || scalar == "\u{0C}"
  }

  /// What a catalog promises the daemon: valid keys, sorted, sources on real lines.
  private func checkCatalog(_ catalog: Catalog, lineCounts: [String: Int]) {
    check(catalog.sortedKeys.count == catalog.switches.count, "sortedKeys and switches differ")
    for (a, b) in zip(catalog.sortedKeys, catalog.sortedKeys.dropFirst()) {
      check(Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)), "sortedKeys not sorted")
    }
    for (key, definition) in catalog.switches {
      check(definition.key == key, "a switch filed under another key")
      check(SwitchKey.isValid(key), "an invalid key in the catalog: \(key)")
      let lines = lineCounts[definition.source.file] ?? 0
      check((1...max(1, lines)).contains(definition.source.line), "a switch source off its file")
    }
    for (key, rule) in catalog.policies {
      check(rule.key == key && SwitchKey.isValid(key), "an invalid policy key: \(key)")
      check(rule.readOnly || rule.readOnlySource == nil, "a source for a ReadOnly=no policy")
      check(rule.disabled || rule.disabledSource == nil, "a source for a Disabled=no policy")
    }
    let settings = catalog.settings
    check((1024...64 << 20).contains(settings.maxFrameBytes), "MaxFrameBytes out of range")
    check((1...1_000_000).contains(settings.maxConnections), "MaxConnections out of range")
    check((2...512).contains(settings.maxNestingDepth), "MaxNestingDepth out of range")
    check((1...1000).contains(settings.maxHistoryPage), "MaxHistoryPage out of range")
    check(settings.socketMode <= 0o777, "SocketMode out of range")
    check((settings.socket?.utf8.count ?? 0) <= 107, "Socket= longer than sun_path")
    check(catalog.warnings.allSatisfy { $0.severity == .warning }, "an error among warnings")
  }
#else
  // A declaration, not a statement: this file must still parse when
  // `--sanitize fuzzer` compiles it as a library (inactive branches are
  // parsed too). In a normal build, main.swift's globals run in order.
  private let printed: Void = print(
    """
    fuzz-keyfile: a libFuzzer target; this build has no fuzzer in it. Build and run it with
      FUZZ_SECONDS=60 bash .ci/fuzz.sh
    or by hand:
      swift build -c release --scratch-path .build-fuzz --product fuzz-keyfile \\
        -Xswiftc -DFUZZING -Xswiftc -sanitize=fuzzer,address \\
        --sanitize fuzzer --sanitize address
      .build-fuzz/release/fuzz-keyfile CORPUS_COPY_DIR -max_total_time=60
    """)
#endif
