import Testing

@testable import SwitchProtocol

@Suite struct LineFramerTests {
  static func frames(_ input: [UInt8], chunks: [Int], max: Int = 64) -> [LineFramer.Frame] {
    var framer = LineFramer(maxFrameBytes: max)
    var out: [LineFramer.Frame] = []
    var offset = 0
    var i = 0
    while offset < input.count {
      let size = Swift.max(1, chunks[i % chunks.count])
      let end = Swift.min(input.count, offset + size)
      framer.append(Array(input[offset..<end]))
      while let frame = framer.next() { out.append(frame) }
      offset = end
      i += 1
    }
    return out
  }

  static let input = Array(
    ("{\"a\":1}\n\n  \r\n[2]\r\n" + String(repeating: "x", count: 200) + "\nlast\n"
      + String(repeating: "y", count: 70) + "\nafter\npartial").utf8)

  @Test func byteByByteEqualsAllAtOnce() {
    let whole = Self.frames(Self.input, chunks: [Self.input.count])
    let bytewise = Self.frames(Self.input, chunks: [1])
    let ragged = Self.frames(Self.input, chunks: [3, 7, 1, 64, 2])
    #expect(whole == bytewise)
    #expect(whole == ragged)
    #expect(
      whole == [
        .line(Array("{\"a\":1}".utf8)[...]), .line(Array("[2]\r".utf8)[...]), .oversized,
        .line(Array("last".utf8)[...]), .oversized, .line(Array("after".utf8)[...]),
      ])
  }

  @Test func anOversizedLineIsReportedOnceAndTheBufferStaysBounded() {
    var framer = LineFramer(maxFrameBytes: 16)
    var reports = 0
    for _ in 0..<1000 {
      framer.append(Array(repeating: UInt8(ascii: "z"), count: 100))
      while let frame = framer.next() {
        if frame == .oversized { reports += 1 }
      }
      #expect(framer.bufferedCount <= 16 + 100)
    }
    framer.append(Array("\nok\n".utf8))
    #expect(framer.next() == .line(Array("ok".utf8)[...]))
    #expect(reports == 1)
  }

  @Test func aBlankVarlinkMessageIsAFrameABlankLineIsNot() {
    var varlink = LineFramer(maxFrameBytes: 64, delimiter: 0)
    varlink.append([0, 0x20, 0x09, 0, 0x7B, 0x7D, 0])
    #expect(varlink.next() == .line([][...]))
    #expect(varlink.next() == .line([0x20, 0x09][...]))
    #expect(varlink.next() == .line([0x7B, 0x7D][...]))
    var lines = LineFramer(maxFrameBytes: 64)
    lines.append(Array("\n \t\n{}\n".utf8))
    #expect(lines.next() == .line(Array("{}".utf8)[...]))
  }

  @Test func aPartialLineWaitsForItsNewline() {
    var framer = LineFramer(maxFrameBytes: 64)
    framer.append(Array("{\"jsonrpc\"".utf8))
    #expect(framer.next() == nil)
    framer.append(Array(":\"2.0\"}\n".utf8))
    #expect(framer.next() == .line(Array("{\"jsonrpc\":\"2.0\"}".utf8)[...]))
  }

  @Test func aReusedBufferShowsNothingOfWhatWasFramedBefore() {
    // The framer keeps its buffer's length and tracks where its bytes end:
    // bytes of earlier lines still lie past that end, and must not be
    // taken for a newline or for part of a line.
    var framer = LineFramer(maxFrameBytes: 64)
    framer.append(Array("first line, long enough\n".utf8))
    #expect(framer.next() == .line(Array("first line, long enough".utf8)[...]))
    #expect(framer.bufferedCount == 0)
    framer.append(Array("two".utf8))
    #expect(framer.next() == nil)
    #expect(framer.bufferedCount == 3)
    framer.append(Array("\nthree".utf8))
    #expect(framer.next() == .line(Array("two".utf8)[...]))
    #expect(framer.next() == nil)
    // The partial line moved to the front, then completed.
    framer.append(Array(" and four\n".utf8))
    #expect(framer.next() == .line(Array("three and four".utf8)[...]))
    #expect(framer.next() == nil)
    #expect(framer.bufferedCount == 0)
  }
}
