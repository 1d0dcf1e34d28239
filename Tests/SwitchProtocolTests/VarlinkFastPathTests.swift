import Testing

@testable import SwitchProtocol

/// The varlink calls read without a JSON tree, compact or written with
/// spaces, decode to exactly what the general path gives them.
@Suite struct VarlinkFastPathTests {
  static func decode(_ text: String) -> VarlinkMessage {
    Array(text.utf8).withUnsafeBufferPointer { VarlinkDecoder.decode($0, maxDepth: 32) }
  }

  static func decodeGeneral(_ text: String) -> VarlinkMessage {
    Array(text.utf8).withUnsafeBufferPointer { VarlinkDecoder.decodeGeneral($0, maxDepth: 32) }
  }

  static func takesFastPath(_ text: String) -> Bool {
    Array(text.utf8).withUnsafeBufferPointer {
      RequestFastPath.varlinkCall($0, maxDepth: 32) != nil
    }
  }

  /// The same call with a space after every ':' and ',' (never inside strings here).
  static func spaced(_ text: String) -> String {
    var out = ""
    for c in text {
      out.append(c)
      if c == ":" || c == "," { out.append(" ") }
    }
    return out
  }

  static let calls = [
    #"{"method":"io.switchd.Switches.Get","parameters":{"key":"wifi"}}"#,
    #"{"parameters":{"key":"wifi"},"method":"io.switchd.Switches.Toggle"}"#,
    #"{"method":"io.switchd.Switches.Set","parameters":{"key":"wifi","checked":false,"ifRevision":3}}"#,
    #"{"method":"io.switchd.Switches.Toggle","parameters":{"key":"wifi","allowInteractiveAuthentication":true}}"#,
    #"{"method":"io.switchd.Switches.Status"}"#,
    #"{"method":"io.switchd.Switches.Get","parameters":{}}"#,
    #"{"method":"io.switchd.Switches.Get","parameters":{"key":"Wi_Fi"}}"#,
    #"{"method":"io.switchd.Switches.Get","parameters":{"key":"wifi","checked":1}}"#,
    #"{"method":"io.switchd.Switches.Nope","parameters":{"key":"wifi"}}"#,
    #"{"method":"org.varlink.service.GetInfo"}"#,
    #"{"method":"io.switchd.Switches.Watch","parameters":{"keys":"wifi"}}"#,
    #"{"method":"other.Interface.Get"}"#,
    #"{"method":"io.switchd.Switches.Get","parameters":{"key":"wifi","key":"bluetooth"}}"#,
  ]

  @Test(arguments: calls)
  func agreesWithTheGeneralPath(_ call: String) {
    for text in [call, Self.spaced(call), " \(Self.spaced(call))\t "] {
      #expect(Self.takesFastPath(text), "\(text)")
      let fast = Self.decode(text)
      let general = Self.decodeGeneral(text)
      #expect(fast.body == general.body)
      #expect(fast.oneway == general.oneway && fast.more == general.more)
      #expect(fast.allowsInteraction == general.allowsInteraction)
    }
  }

  /// A Get, Toggle or Set of a key is read straight into its Call, and
  /// that Call is the general path's; what it does not read it leaves.
  @Test func keyCallsTakeTheKeyPathAndAgree() {
    func keyCall(_ text: String) -> (method: Method, call: Call)? {
      Array(text.utf8).withUnsafeBufferPointer {
        RequestFastPath.varlinkKeyCall($0, maxDepth: 32)
      }
    }
    let taken = [
      #"{"method":"io.switchd.Switches.Get","parameters":{"key":"wifi"}}"#,
      #"{"parameters":{"key":"wifi"},"method":"io.switchd.Switches.Toggle"}"#,
      #"{"method": "io.switchd.Switches.Set", "parameters": {"key": "wifi", "checked": true}}"#,
      #"{"method":"io.switchd.Switches.Lock","parameters":{"key":"wifi"}}"#,
    ]
    for text in taken {
      guard let (method, call) = keyCall(text) else {
        Issue.record("declined \(text)")
        continue
      }
      #expect(Self.decodeGeneral(text).body == .call(method, .success(call)), "\(text)")
    }
    for text in [
      #"{"method":"io.switchd.Switches.get","parameters":{"key":"wifi"}}"#,
      #"{"method":"io.switchd.Switches.GET","parameters":{"key":"wifi"}}"#,
      #"{"method":"io.switchd.Switches.Backup","parameters":{"key":"wifi"}}"#,
      #"{"method":"io.switchd.Switches.Unwatch","parameters":{"key":"wifi"}}"#,
      #"{"method":"io.switchd.Switches.Watch","parameters":{"key":"wifi"}}"#,
      #"{"method":"io.switchd.Switche.Get","parameters":{"key":"wifi"}}"#,
      #"{"method":"org.varlink.service.Get","parameters":{"key":"wifi"}}"#,
      #"{"method":"io.switchd.Switches.Get","parameters":{"key":"Wi_Fi"}}"#,
      #"{"method":"io.switchd.Switches.Set","parameters":{"key":"wifi"}}"#,
      #"{"method":"io.switchd.Switches.Get","parameters":{"key":"wifi"},"oneway":true}"#,
      #"{"method":"io.switchd.Switches.Get"}"#,
    ] {
      #expect(keyCall(text) == nil, "\(text)")
    }
  }

  @Test func declinesWhatItDoesNotRead() {
    for call in [
      #"{"method":"io.switchd.Switches.Watch","more":true}"#,
      #"{"method":"io.switchd.Switches.Toggle","oneway":true,"parameters":{"key":"wifi"}}"#,
      #"{"method":"io.switchd.Switches.Get","parameters":{"key":null}}"#,
      #"{"method":"io.switchd.Switches.Get","method":"io.switchd.Switches.Get"}"#,
      #"{"parameters":{"key":"wifi"}}"#,
      #"{"method":"io.switchd.Switches.Get"} x"#,
    ] {
      #expect(!Self.takesFastPath(call), "\(call)")
    }
  }
}
