// fuzz-protocol: a libFuzzer target for what a client's bytes go through
// first: LineFramer (NDJSON framing), JSONParser, RequestDecoder (the
// JSON-RPC envelope, and its fast path held to its general path) and
// Call.decode (params), plus the JSONWriter round trip; and the varlink
// path: LineFramer with NUL framing and VarlinkDecoder, whose every answer
// must encode as one NUL-free JSON message.
//
// Without -DFUZZING this is a stub that says how to build it; `.ci/fuzz.sh`
// builds it with `-DFUZZING` and libFuzzer plus AddressSanitizer in its own
// scratch directory and runs it on a copy of Fuzz/corpus/protocol.

#if FUZZING
  import SwitchCore
  import SwitchProtocol

  /// The framing a reference splitter predicts, and what the framer returns.
  private enum Framed: Equatable {
    case line([UInt8])
    case oversized
  }

  private let newline = UInt8(ascii: "\n")

  /// The nesting limit the daemon uses by default, and the largest it accepts.
  private let defaultDepth = 32
  private let maxConfigDepth = 512

  /// Declared keys whose Strings the key-call fast path takes (`KeyInterner`):
  /// past 15 bytes, as the catalog's long keys are.
  private let declaredKeys = KeyInterner(
    ["notifications.chat", "org.example.devices.toggle.c1", "sixteen.byte.key"])

  /// libFuzzer's entry point. SwiftPM's `--sanitize fuzzer` compiles this
  /// file as a library (no top-level code) and links libFuzzer's `main`.
  @_cdecl("LLVMFuzzerTestOneInput")
  public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input: [UInt8] =
      size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    // Small bounds make the oversized paths reachable; the default is the daemon's.
    let bounds = [8, 100, 1024, 1 << 20]
    let maxFrameBytes = bounds[input.count % bounds.count]

    let expected = referenceFrames(input, maxFrameBytes: maxFrameBytes)
    let whole = frames(input, maxFrameBytes: maxFrameBytes, chunked: false, drainAfterEvery: true)
    let chunked = frames(input, maxFrameBytes: maxFrameBytes, chunked: true, drainAfterEvery: true)
    let lazy = frames(input, maxFrameBytes: maxFrameBytes, chunked: true, drainAfterEvery: false)
    check(whole == expected, "all-at-once framing differs from the reference")
    check(chunked == expected, "chunked framing differs from all-at-once")
    check(lazy == expected, "chunked framing with late draining differs from all-at-once")
    fuzzVarlink(input, maxFrameBytes: maxFrameBytes)

    for frame in whole {
      guard case .line(let line) = frame else { continue }
      check(line.count <= maxFrameBytes, "a frame is longer than maxFrameBytes")
      check(!line.contains(newline), "a frame holds a newline")
      checkFastPath(line)
      decodeAndCheck(line)
      roundTrip(line)
    }
    return 0
  }

  private func check(_ condition: Bool, _ what: @autoclosure () -> String) {
    if !condition { fatalError("fuzz-protocol invariant: \(what())") }
  }

  // MARK: Framing

  /// What NDJSON framing must give: every complete line, blank ones
  /// skipped, a line longer than the bound as one `.oversized`; a trailing
  /// partial line only when it is already too long. NUL framing (varlink)
  /// keeps blank messages: each is a call that gets an answer.
  private func referenceFrames(
    _ input: [UInt8], maxFrameBytes: Int, delimiter: UInt8 = newline
  ) -> [Framed] {
    var result: [Framed] = []
    var pieces = input.split(separator: delimiter, omittingEmptySubsequences: false)
    let partial = pieces.removeLast()
    for piece in pieces {
      if piece.count > maxFrameBytes {
        result.append(.oversized)
      } else if delimiter == 0 || !piece.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) {
        result.append(.line(Array(piece)))
      }
    }
    if partial.count > maxFrameBytes { result.append(.oversized) }
    return result
  }

  /// Feeds the input to a LineFramer at once, or in chunks whose sizes come
  /// from the input's own bytes; drains after every chunk, or (like the
  /// daemon when a client's answers are backed up) only now and then.
  private func frames(
    _ input: [UInt8], maxFrameBytes: Int, chunked: Bool, drainAfterEvery: Bool,
    delimiter: UInt8 = newline
  ) -> [Framed] {
    var framer = LineFramer(maxFrameBytes: maxFrameBytes, delimiter: delimiter)
    var result: [Framed] = []
    func drain() {
      while let frame = framer.next() {
        switch frame {
        case .line(let bytes): result.append(.line(Array(bytes)))
        case .oversized: result.append(.oversized)
        }
      }
      check(framer.bufferedCount >= 0, "negative buffered count")
    }
    guard chunked, !input.isEmpty else {
      framer.append(input)
      drain()
      return result
    }
    var position = 0
    var round = 0
    while position < input.count {
      let b = input[(round &* 7919 &+ position) % input.count] ^ UInt8(truncatingIfNeeded: round)
      let size = b < 200 ? 1 + Int(b % 17) : 1 + Int(b) * 8
      let end = min(input.count, position + size)
      input[position..<end].withUnsafeBytes { framer.append($0) }
      position = end
      if drainAfterEvery || b % 3 == 0 { drain() }
      round += 1
    }
    drain()
    return result
  }

  // MARK: Decoding

  /// RequestDecoder.decode (its fast path first) gives exactly what its
  /// general path alone gives, at the default depth and at the small depths
  /// where the general path refuses a params object.
  private func checkFastPath(_ line: [UInt8]) {
    for depth in [defaultDepth, 1 + line.count % 2] {
      let (decoded, general) = line.withUnsafeBufferPointer {
        (
          RequestDecoder.decode($0, maxDepth: depth),
          RequestDecoder.decodeGeneral($0, maxDepth: depth)
        )
      }
      check(decoded == general, "the fast path differs from the general path at depth \(depth)")
      checkKeyCall(line, depth: depth, general: general)
      if case .single(.success(let a)) = decoded, case .single(.success(let b)) = general {
        // String's == is canonical equivalence: compare the bytes too.
        check(requestBytes(a) == requestBytes(b), "the fast path's strings differ in bytes")
      }
    }
  }

  /// The key-call fast path (RequestDecoder.decodeCall) declines, or gives
  /// the id, method and Call the general path and Call.decode give.
  private func checkKeyCall(_ line: [UInt8], depth: Int, general: Incoming) {
    guard
      let fast = line.withUnsafeBufferPointer({ RequestDecoder.decodeCall($0, maxDepth: depth) })
    else { return }
    // With the catalog's keys: the same call, a declared key's String shared.
    let shared = line.withUnsafeBufferPointer {
      RequestDecoder.decodeCall($0, maxDepth: depth, keys: declaredKeys)
    }
    check(shared == fast, "the key call with declared keys differs from the one without")
    guard case .single(.success(let request)) = general, let method = Method.named(request.method)
    else { return check(false, "the key call took a line the general path refuses") }
    check(fast.method == method && fast.id == request.id, "the key call's id or method differs")
    check(
      Call.decode(method, params: request.params) == .success(fast.call)
        && !Call.allowsInteractiveAuthentication(request.params),
      "the key call's Call differs from Call.decode's")
  }

  private func requestBytes(_ r: Request) -> [UInt8] {
    let id = r.id.map { [JSONMember("id", $0.jsonValue)] } ?? []
    let params = r.params.map { [JSONMember("params", $0)] } ?? []
    return JSONValue.object([JSONMember("method", .string(r.method))] + id + params).jsonBytes
  }

  /// Decodes one line as the daemon does and checks the verdict against the
  /// parser's; every answer it would send must be one line of valid JSON.
  private func decodeAndCheck(_ line: [UInt8]) {
    let incoming = line.withUnsafeBufferPointer {
      RequestDecoder.decode($0, maxDepth: defaultDepth)
    }
    let parsed = line.withUnsafeBufferPointer { buffer in
      Result { () throws(JSONParseError) -> JSONValue in
        try JSONParser.parse(buffer, maxDepth: defaultDepth)
      }
    }
    switch parsed {
    case .failure(let error):
      guard case .single(.failure(let invalid)) = incoming else {
        fatalError("fuzz-protocol invariant: a line the parser refuses was decoded")
      }
      let code = error.kind == .tooDeep ? RPCErrorCode.invalidRequest : .parseError
      check(invalid.error.code == code, "wrong code \(invalid.error.code.rawValue) for \(error)")
      check(invalid.id == .null, "a parse error answered with an id")
      checkAnswer(id: invalid.id, invalid.error)
    case .success(let value):
      let items: [Incoming.Item]
      switch incoming {
      case .single(let item):
        if let elements = value.arrayValue {
          check(elements.isEmpty, "a non-empty array decoded as a single request")
        }
        items = [item]
      case .batch(let batch):
        check(batch.count == value.arrayValue?.count, "a batch lost or gained requests")
        items = batch
      }
      for item in items { decodeCall(item) }
    }
  }

  private func decodeCall(_ item: Incoming.Item) {
    switch item {
    case .failure(let invalid):
      check(invalid.error.code == .invalidRequest, "an envelope error that is not InvalidRequest")
      checkAnswer(id: invalid.id, invalid.error)
    case .success(let request):
      let id = request.id ?? .null
      guard let method = Method(rawValue: request.method) else {
        checkAnswer(id: id, .methodNotFound(request.method))
        return
      }
      switch Call.decode(method, params: request.params) {
      case .failure(let error):
        check(error.code == .invalidParams, "Call.decode failed with \(error.code.rawValue)")
        checkAnswer(id: id, error)
      case .success(let call):
        checkCall(call)
      }
    }
  }

  /// What a decoded call promises the daemon.
  private func checkCall(_ call: Call) {
    switch call {
    case .get(let key, let user):
      check(isSwitchKey(key), "an invalid key was accepted: \(key)")
      check(user != .everyone, "\"user\": \"*\" was accepted on get")
    case .write(let key, _, _, let lasting):
      check(isSwitchKey(key), "an invalid key was accepted: \(key)")
      switch lasting {
      case .seconds(let seconds)?:
        check((1...31_536_000).contains(seconds), "a \"for\" of \(seconds) s was accepted")
      case .confirmWithin(let seconds, _)?:
        check((1...3600).contains(seconds), "a \"confirmWithin\" of \(seconds) s was accepted")
      case .until, nil:
        break
      }
    case .history(let key, let limit, let before, _):
      check(key.map { isSwitchKey($0) } ?? true, "an invalid history key was accepted")
      check((1...1000).contains(limit), "history limit \(limit) out of range")
      check((before ?? 0) >= 0, "a negative revision was accepted")
    case .watch(let patterns, let since, _):
      check(patterns.map { !$0.isEmpty && $0.count <= 256 } ?? true, "bad pattern list")
      check((since ?? 0) >= 0, "a negative revision was accepted")
    case .list(let prefix, let user):
      check((prefix?.utf8.count ?? 0) <= 256, "a list prefix over 256 bytes was accepted")
      check(user != .everyone, "\"user\": \"*\" was accepted on list")
    case .unwatch(let id):
      check(id.utf8.count <= 64, "a watch id over 64 bytes was accepted")
    case .reload, .status, .backup:
      break
    }
  }

  /// docs/protocol.md's key grammar, written again as an independent oracle:
  /// `^[a-z][a-z0-9]*([.-][a-z0-9]+)*$`, at most 128 bytes.
  private func isSwitchKey(_ key: String) -> Bool {
    let bytes = Array(key.utf8)
    guard let first = bytes.first, bytes.count <= 128, (0x61...0x7A).contains(first) else {
      return false
    }
    var afterSeparator = false
    for b in bytes.dropFirst() {
      if (0x61...0x7A).contains(b) || (0x30...0x39).contains(b) {
        afterSeparator = false
      } else if b == UInt8(ascii: ".") || b == UInt8(ascii: "-") {
        if afterSeparator { return false }
        afterSeparator = true
      } else {
        return false
      }
    }
    return !afterSeparator
  }

  /// The error response the daemon would send: one line of JSON that reads
  /// back with the same id and code.
  private func checkAnswer(id: RequestID, _ error: RPCError) {
    var writer = JSONWriter()
    ResponseEncoding.writeError(&writer, id: id, error)
    check(!writer.bytes.contains(newline), "an error response holds a raw newline")
    do {
      let back = try JSONParser.parse(writer.bytes, maxDepth: maxConfigDepth)
      check(back["id"] == id.jsonValue, "the response id does not read back")
      check(
        back["error"]?["code"]?.int64Value == Int64(error.code.rawValue),
        "the error code does not read back")
      check(
        back["error"]?["data"]?["name"]?.stringValue == error.code.name,
        "data.name does not read back")
    } catch {
      fatalError("fuzz-protocol invariant: an error response is not valid JSON: \(error)")
    }
  }

  // MARK: varlink

  /// NUL framing agrees with the reference, chunked or not; each message
  /// decodes to a call (its Call as promised) or to an answer that encodes.
  private func fuzzVarlink(_ input: [UInt8], maxFrameBytes: Int) {
    let expected = referenceFrames(input, maxFrameBytes: maxFrameBytes, delimiter: 0)
    let whole = frames(
      input, maxFrameBytes: maxFrameBytes, chunked: false, drainAfterEvery: true, delimiter: 0)
    let chunked = frames(
      input, maxFrameBytes: maxFrameBytes, chunked: true, drainAfterEvery: false, delimiter: 0)
    check(whole == expected, "NUL framing differs from the reference")
    check(chunked == expected, "chunked NUL framing differs from all-at-once")
    for frame in whole {
      guard case .line(let message) = frame else { continue }
      check(!message.contains(0), "a varlink frame holds a NUL")
      let (decoded, general) = message.withUnsafeBufferPointer {
        (
          VarlinkDecoder.decode($0, maxDepth: defaultDepth),
          VarlinkDecoder.decodeGeneral($0, maxDepth: defaultDepth)
        )
      }
      check(
        decoded.body == general.body && decoded.oneway == general.oneway
          && decoded.more == general.more && decoded.allowsInteraction == general.allowsInteraction,
        "a varlink fast path differs from the general path")
      switch decoded.body {
      case .call(let method, .success(let call)):
        check(method != .watch || decoded.more, "a Watch without more was accepted")
        check(VarlinkInterface.methodName(method) != nil, "a JSON-RPC-only method was accepted")
        checkCall(call)
      case .call(_, .failure(let error)), .invalid(let error), .describe(.failure(let error)):
        checkVarlinkAnswer(error)
      case .getInfo, .describe(.success):
        break
      }
    }
  }

  /// A varlink error reply: one JSON object without NUL or newline, named.
  private func checkVarlinkAnswer(_ error: RPCError) {
    var writer = JSONWriter()
    VarlinkEncoding.writeError(&writer, error)
    check(!writer.bytes.contains(0) && !writer.bytes.contains(newline), "a raw NUL or newline")
    guard let back = try? JSONParser.parse(writer.bytes, maxDepth: maxConfigDepth) else {
      fatalError("fuzz-protocol invariant: a varlink error reply is not valid JSON")
    }
    check(back["error"]?.stringValue?.contains(".") == true, "a varlink error without a name")
    check(back["parameters"]?.objectMembers != nil, "a varlink error without parameters")
  }

  // MARK: Round trip

  /// Any JSON that parses re-serializes to one line that parses to an equal
  /// value, and serializing that again gives the same bytes.
  private func roundTrip(_ line: [UInt8]) {
    guard let value = try? JSONParser.parse(line, maxDepth: maxConfigDepth) else { return }
    let bytes = value.jsonBytes
    check(!bytes.contains(newline), "JSONWriter emitted a raw newline")
    do {
      let again = try JSONParser.parse(bytes, maxDepth: maxConfigDepth)
      check(again == value, "the re-parsed value differs")
      check(again.jsonBytes == bytes, "serializing is not stable")
    } catch {
      fatalError("fuzz-protocol invariant: JSONWriter output does not parse: \(error)")
    }
    checkNumbers(value)
  }

  /// Every number's text is valid JSON number text, and its Int64 reading
  /// agrees with the standard library's.
  private func checkNumbers(_ value: JSONValue) {
    switch value {
    case .number(let number):
      check(JSONNumber(text: number.text) != nil, "number text \(number.text) is not valid")
      check(number.int64 == Int64(number.text), "int64 of \(number.text) is \(number.int64 as Any)")
    case .array(let elements):
      for element in elements { checkNumbers(element) }
    case .object(let members):
      for member in members { checkNumbers(member.value) }
    case .null, .bool, .string:
      break
    }
  }

#else
  // A declaration, not a statement: this file must still parse when
  // `--sanitize fuzzer` compiles it as a library (inactive branches are
  // parsed too). In a normal build, main.swift's globals run in order.
  private let printed: Void = print(
    """
    fuzz-protocol: a libFuzzer target; this build has no fuzzer in it. Build and run it with
      FUZZ_SECONDS=60 bash .ci/fuzz.sh
    or by hand:
      swift build -c release --scratch-path .build-fuzz --product fuzz-protocol \\
        -Xswiftc -DFUZZING -Xswiftc -sanitize=fuzzer,address \\
        --sanitize fuzzer --sanitize address
      .build-fuzz/release/fuzz-protocol CORPUS_COPY_DIR -max_total_time=60
    """)
#endif
