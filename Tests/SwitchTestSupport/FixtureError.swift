/// A failure in a test's set-up (a file, a process, a socket), with what happened.
public struct FixtureError: Error, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}
