import Testing

@testable import SwitchDaemon

/// `<N>` priority prefixes are for journald and log collectors, not people.
@Suite struct LogPrefixTests {
  @Test func aTerminalGetsNoPrefixes() {
    #expect(!Log.wantsPriorityPrefixes(isTerminal: true, journalStream: nil, stderrIdentity: "1:2"))
  }

  @Test func aPipeOrAFileGetsPrefixes() {
    #expect(Log.wantsPriorityPrefixes(isTerminal: false, journalStream: nil, stderrIdentity: "1:2"))
  }

  @Test func journaldIsRecognisedByItsStreamEvenBeforeTheTerminalCheck() {
    #expect(
      Log.wantsPriorityPrefixes(isTerminal: true, journalStream: "1:2", stderrIdentity: "1:2"))
    // A JOURNAL_STREAM inherited by a process whose stderr is elsewhere (a
    // terminal) says nothing about this stderr.
    #expect(
      !Log.wantsPriorityPrefixes(isTerminal: true, journalStream: "1:2", stderrIdentity: "3:4"))
  }
}
