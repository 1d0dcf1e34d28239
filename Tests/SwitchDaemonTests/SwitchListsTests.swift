import Glibc
import SwitchCore
import SwitchProtocol
import Testing

@testable import SwitchDaemon

/// A list made again from a kept one (`SwitchLists`) is byte for byte the
/// list made from scratch, and on a real loop every list and snapshot of
/// many switches shows each one as a `get` of it does, after changes of
/// every kind that change what a reader sees.
@Suite struct SwitchListsTests {
  static let caller = Caller(actor: .peer(uid: 0, gid: 0, pid: 3), isAdmin: true, mayWrite: true)

  /// Positions with versions; a few without a record.
  struct Objects {
    var versions: [Int]
    var stored: [Bool]
    var encodings: SwitchEncodings

    init(count: Int) {
      versions = Array(repeating: 0, count: count)
      stored = (0..<count).map { $0 % 7 != 3 }
      encodings = SwitchEncodings(sortedKeys: (0..<count).map { "k\(1000 + $0)" })
    }

    mutating func change(_ position: Int) {
      versions[position] += 1
      encodings.touch(at: position)
    }

    func make(_ key: SwitchLists.Key, from old: SwitchLists.Kept?) -> SwitchLists.Kept {
      SwitchLists.make(
        key, stamp: encodings.stamp, from: old,
        changed: { encodings.changed(at: $0, since: $1) }, stored: { stored[$0] },
        write: { w, position in
          // Objects of different lengths, so a changed one moves the rest.
          w.raw("{\"p\":")
          w.int(Int64(position))
          w.raw(",\"v\":\"")
          w.append(contentsOf: Array(repeating: UInt8(ascii: "x"), count: versions[position] % 5))
          w.raw("\"}")
        })
    }
  }

  @Test(arguments: [0..<200, 0..<1, 3..<4, 5..<90])
  func aListMadeAgainEqualsOneMadeFromScratch(positions: Range<Int>) {
    var objects = Objects(count: 200)
    let key = SwitchLists.Key(positions: positions, caller: Self.caller, viewpoint: .user(0))
    var kept = objects.make(key, from: nil)
    var random: UInt64 = 0x5EED
    for round in 0..<300 {
      // 0 to 4 changes a round, anywhere (out of the range too), the first and last included.
      random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      for change in 0..<Int(random >> 61) {
        let pick = Int((random >> UInt64(8 * change)) & 0xFF) % 203
        objects.change(pick < 200 ? pick : [0, 199, positions.lowerBound][pick - 200])
      }
      let remade = objects.make(key, from: kept)
      let fresh = objects.make(key, from: nil)
      #expect(remade.bytes == fresh.bytes, "round \(round)")
      #expect(remade.ends == fresh.ends, "round \(round)")
      #expect(remade.stamp == objects.encodings.stamp)
      kept = remade
    }
  }

  @Test func aSwitchThatGainedARecordIsWrittenFromScratch() {
    var objects = Objects(count: 20)
    let key = SwitchLists.Key(positions: 0..<20, caller: Self.caller, viewpoint: .user(0))
    let kept = objects.make(key, from: nil)
    objects.stored[3] = true
    objects.change(3)
    let remade = objects.make(key, from: kept)
    #expect(remade.bytes == objects.make(key, from: nil).bytes)
    #expect(String(decoding: remade.bytes, as: UTF8.self).contains("{\"p\":3,"))
  }

  @Test func theCacheKeepsTheMostRecentlyUsedWithinItsBounds() {
    var lists = SwitchLists()
    func kept(_ start: Int, bytes: Int = 10) -> SwitchLists.Kept {
      SwitchLists.Kept(
        key: SwitchLists.Key(
          positions: start..<start + 100, caller: Self.caller, viewpoint: .everyone),
        stamp: 0, bytes: Array(repeating: 0, count: bytes), ends: [])
    }
    for start in 0..<SwitchLists.slots + 1 { lists.keep(kept(start)) }
    #expect(lists.count == SwitchLists.slots)
    #expect(lists.take(kept(0).key) == nil, "the least recently used went")
    #expect(lists.take(kept(1).key) != nil)
    #expect(lists.take(kept(1).key) == nil, "taken out until kept again")
    lists.keep(kept(50, bytes: SwitchLists.maxBytes + 1))
    #expect(lists.take(kept(50).key) == nil, "one over the bound is not kept")
    lists.keep(kept(60, bytes: SwitchLists.maxBytes / 2))
    lists.keep(kept(70, bytes: SwitchLists.maxBytes / 2 + 1))
    #expect(lists.take(kept(60).key) == nil, "pushed out: both are over the bound in all")
    #expect(lists.take(kept(70).key) != nil)
  }

  @Test func twoProcessesOfOneUserShareAListAndOtherRightsDoNot() {
    func key(_ caller: Caller) -> SwitchLists.Key {
      SwitchLists.Key(positions: 0..<100, caller: caller, viewpoint: .user(1000))
    }
    let one = Caller(actor: .peer(uid: 1000, gid: 100, pid: 41), isAdmin: false, mayWrite: true)
    var other = one
    other.actor = .peer(uid: 1000, gid: 1000, pid: 42)
    #expect(key(one) == key(other))
    var otherUser = one
    otherUser.actor = .peer(uid: 1001, gid: 100, pid: 41)
    var reader = one
    reader.mayWrite = false
    #expect(key(one) != key(otherUser))
    #expect(key(one) != key(reader))
    #expect(key(one) != key(one.acting(as: 1001)))
  }

  // MARK: On a real loop

  /// 100 switches (a list of them is kept), one of them user-scope and one
  /// read-only by policy for its `writableReason`.
  static func harness() throws -> LoopHarness {
    try LoopHarness(daemonConf: "[Daemon]\nAdminGroup=\nLogLevel=warning\n") { directory in
      var text = ""
      for n in 0..<100 {
        text += "[s.\(100 + n)]\nLabel=Switch \(n)\nDefault=\(n % 2 == 0 ? "on" : "off")\n"
        if n == 10 { text += "Scope=user\n" }
      }
      return text
    }
  }

  /// What `request` answers on `client`, as the text of its result.
  static func result(_ client: TestClient, _ request: String) -> String {
    let before = client.lines.count
    client.drive(input: Array((request + "\n").utf8)) { $0.lines.count > before }
    guard client.lines.count > before else { return "no answer to \(request)" }
    let line = client.lines[before]
    let marker = Array("\"result\":".utf8)
    let bytes = Array(line.utf8)
    guard
      let start = (0...(bytes.count - marker.count)).first(where: {
        bytes[$0..<$0 + marker.count].elementsEqual(marker)
      }), bytes.last == UInt8(ascii: "}")
    else { return line }
    return String(decoding: bytes[(start + marker.count)..<(bytes.count - 1)], as: UTF8.self)
  }

  /// The list (or snapshot) `request` answers holds, in order, each switch
  /// as `get` (never kept) shows it with `params` added.
  static func expectListMatchesGets(
    _ client: TestClient, _ request: String, params: String = "",
    sourceLocation: Testing.SourceLocation = #_sourceLocation
  ) {
    let gets = (0..<100).map { n in
      result(
        client,
        #"{"jsonrpc":"2.0","id":7,"method":"get","params":{"key":"s.\#(100 + n)"\#(params)}}"#)
    }
    let listed = result(client, request)
    let expected = "\"switches\":[" + gets.joined(separator: ",") + "]"
    // Compared here: the lists are ~100 KB, too long for a failure message.
    let matches = listed.contains(expected)
    #expect(matches, "\(listed.prefix(300))", sourceLocation: sourceLocation)
  }

  @Test func listsShowEveryChangeAsGetDoes() throws {
    let harness = try Self.harness()
    defer { harness.stop() }
    let client = try TestClient(harness)
    defer { close(client.fd) }
    let list = #"{"jsonrpc":"2.0","id":1,"method":"list"}"#
    let listAsUser = #"{"jsonrpc":"2.0","id":2,"method":"list","params":{"user":1000}}"#
    let watch = #"{"jsonrpc":"2.0","id":3,"method":"watch"}"#
    Self.expectListMatchesGets(client, list)
    Self.expectListMatchesGets(client, listAsUser, params: #","user":1000"#)
    // A switch's value, then its holds.
    _ = Self.result(client, #"{"jsonrpc":"2.0","id":4,"method":"toggle","params":{"key":"s.150"}}"#)
    Self.expectListMatchesGets(client, list)
    _ = Self.result(
      client,
      #"{"jsonrpc":"2.0","id":5,"method":"lock","params":{"key":"s.199","reason":"for a test"}}"#)
    Self.expectListMatchesGets(client, list)
    Self.expectListMatchesGets(client, watch)
    // One user's own value: only that user's list shows it.
    _ = Self.result(
      client,
      #"{"jsonrpc":"2.0","id":6,"method":"toggle","params":{"key":"s.110","user":1000}}"#)
    Self.expectListMatchesGets(client, listAsUser, params: #","user":1000"#)
    Self.expectListMatchesGets(client, list)
    #expect(harness.server.switchLists.count > 0, "lists were kept")
  }

  /// A `list` sent as a notification wants no answer: none is sent, and no
  /// list is made or kept for it.
  @Test func aListNotificationMakesNoList() throws {
    let harness = try Self.harness()
    defer { harness.stop() }
    let client = try TestClient(harness)
    defer { close(client.fd) }
    let input =
      #"{"jsonrpc":"2.0","method":"list"}"# + "\n"
      + #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"s.100"}}"# + "\n"
    client.drive(input: Array(input.utf8)) { !$0.lines.isEmpty }
    #expect(client.lines.count == 1)
    #expect(client.lines.first?.contains(#""id":1,"result":{"key":"s.100""#) == true)
    #expect(harness.server.switchLists.count == 0)
  }

  /// A kept list answered in a batch, between other answers, and pipelined
  /// behind a write: each answer whole and in its place.
  @Test func aKeptListInABatchAndPipelined() throws {
    let harness = try Self.harness()
    defer { harness.stop() }
    let client = try TestClient(harness)
    defer { close(client.fd) }
    let list = #"{"jsonrpc":"2.0","id":1,"method":"list"}"#
    Self.expectListMatchesGets(client, list)  // now kept
    let before = client.lines.count
    let input =
      #"[{"jsonrpc":"2.0","id":2,"method":"get","params":{"key":"s.100"}},"#
      + #"{"jsonrpc":"2.0","id":3,"method":"list"},{"jsonrpc":"2.0","id":4,"method":"status"}]"#
      + "\n" + #"{"jsonrpc":"2.0","id":5,"method":"toggle","params":{"key":"s.120"}}"# + "\n"
      + list + "\n"
    client.drive(input: Array(input.utf8)) { $0.lines.count >= before + 3 }
    #expect(client.lines.count == before + 3)
    guard client.lines.count == before + 3 else { return }
    let batch = client.lines[before]
    #expect(batch.hasPrefix("[") && batch.hasSuffix("]"))
    #expect(batch.contains(#""id":3,"result":{"revision":"#))
    #expect(batch.contains(#""id":4,"result":{"version""#))
    #expect(client.lines[before + 1].contains(#""id":5,"result":{"changed":true"#))
    let after = client.lines[before + 2]
    #expect(after.hasPrefix(#"{"jsonrpc":"2.0","id":1,"result":{"revision":"#))
    #expect(after.contains(#"{"key":"s.120","#))
    Self.expectListMatchesGets(client, list)
  }
}
