import CShim
import Glibc
import SwitchCore
import SwitchProtocol
import SwitchStore
import SwitchSystem

/// The event loop: one thread, epoll, non-blocking sockets. It owns the
/// connections, the watches and the loop's copy of every switch, answers
/// reads from memory, hands writes to the writer thread and reads of the
/// change log (`history`, `watch since`) to the log reader thread, and
/// publishes committed changes. It never touches SQLite, so it never waits
/// for the disk.
final class Server {
  struct Limits {
    var maxFrameBytes: Int
    var maxConnections: Int
    var maxConnectionsPerUser: Int
    let maxQueuedBytes: Int
    var maxWatchesPerConnection: Int
    var maxNestingDepth: Int
    var params: ParamLimits

    init(_ settings: DaemonSettings) {
      maxFrameBytes = settings.maxFrameBytes
      maxConnections = settings.maxConnections
      maxConnectionsPerUser = settings.maxConnectionsPerUser
      maxQueuedBytes = settings.maxQueuedBytes
      maxWatchesPerConnection = settings.maxWatchesPerConnection
      maxNestingDepth = settings.maxNestingDepth
      params = ParamLimits(maxHistoryPage: settings.maxHistoryPage)
      highWater = min(256 << 10, max(4096, maxQueuedBytes / 2))
    }

    /// Above this many unsent bytes a connection's input is paused.
    let highWater: Int
    /// Above this many unsent bytes held by the connections of one uid
    /// that are past `highWater`, that uid's connections take no new
    /// request (`BacklogPerUser`): 64 MiB by default.
    var backlogPerUser: Int { 64 * maxQueuedBytes }
  }

  // epoll data words below this are the loop's own descriptors.
  static let listenerToken: UInt64 = 0
  static let wakeToken: UInt64 = 1
  static let signalToken: UInt64 = 2
  static let varlinkListenerToken: UInt64 = 3
  static let folderWatchToken: UInt64 = 4

  // Where it serves, and the threads it talks to.
  let log: Log
  let epoll: Int32
  let wakeFD: Int32
  let signalFD: Int32
  /// The watch on the database's folder, read here rather than by the
  /// writer before each commit (`FolderWatch`); nil without one.
  let folderWatch: FolderWatch?
  var listener: Listener?
  /// The same service in varlink (`VarlinkSocket=`), nil when there is none.
  var varlinkListener: Listener?
  var listenerPath = ""
  let databasePath: String
  let configDirectory: String
  let notifier: Notifier
  let startedAt = monotonicSeconds()
  let jobs: BlockingQueue<WriterJob>
  let outputs: BlockingQueue<WriterOutput>
  /// The outputs' arrays, emptied, going back to the writer for its next groups.
  let outputSpares: BlockingQueue<WriterOutput.Spare>
  let readerJobs = BlockingQueue<ReaderJob>()
  let readerOutputs = BlockingQueue<ReaderOutput>()
  /// Emptied buffers going back to the reader for its next history page.
  let readerSpares = BlockingQueue<[UInt8]>()
  let backups = Backups()
  /// Reads the configuration for `reload` and SIGHUP, off the loop.
  let configReader: ConfigReader

  // Connections, watches and writes on their way.
  var nextConnectionID: UInt64 = 16
  var connections = ConnectionTable()
  /// Open connections by peer uid, for `MaxConnectionsPerUser`.
  var connectionsPerUID: [UInt32: Int] = [:]
  /// Writes at the writer by peer uid: one user cannot fill every group.
  var writesPerUser = WritesPerUser(limit: Server.maxWritesInFlightPerUser)
  /// Unsent answers by peer uid: one user cannot make the daemon hold them without bound.
  var backlogPerUser: BacklogPerUser
  /// Connections `backlogPerUser` handed back, resumed at the end of the turn.
  var backlogResumes: [UInt64] = []
  /// Writes submitted during this turn of the loop, not yet handed over.
  var writesThisTurn: [WriterJob] = []
  /// Counts the writer's outputs taken (`drainWriterOutputs`).
  var drainMark: UInt64 = 0
  /// `drainWriterOutputs`' arrays, kept empty with their capacity from
  /// turn to turn (an array made and freed per output cost ~0.4k
  /// instructions, callgrind).
  var drainBuffers = DrainBuffers()
  /// Connections whose watches a reload ended (`endWatchesBeyondRights`),
  /// pumped at the end of the drain to answer what they sent and close.
  var closingForRights: [Connection] = []
  var hub = WatchHub()
  /// The declared switches' Switch objects, encoded once until they change.
  var encodings: SwitchEncodings
  /// The arrays of the last large `list` and `watch` answers, each made
  /// again from what changed since (`SwitchLists`).
  var switchLists = SwitchLists()
  var limits: Limits

  // The loop's copy of the switches: what committed, as of `revision`.
  var catalog: Catalog
  /// Who administers and who writes: every connection's `caller` follows from it.
  var access: AccessRules
  var records: KeyTable<SwitchRecord>
  /// What each switch's `ExecCheck=`/`ExecWatch=` last read of the system
  /// (`observed`), by key; absent while unknown. Not State: never stored.
  var observations: [String: Bool] = [:]
  /// How each switch that reads back is doing, for `status.readBack`.
  var readBackReports: [String: ReadBackReport] = [:]
  /// Every user's own values of user-scope switches, as of `revision`.
  var userValues: UserValues
  var revision: Int64
  var oldestRetained: Int64?
  /// No watch resumes from before this revision (`Writer.Started.resumeFloor`).
  let resumeFloor: Int64
  /// The last reload (by `reload` or SIGHUP) and how it ended, for `status`.
  var lastReload: ReloadRecord?
  /// Switches the reconcile of the start or of a reload is still applying.
  var reconciling: Int

  // Calls waiting for polkit (Server+Polkit.swift).
  /// Asks polkit on a thread of its own; made on the first check.
  var authorizer: Authorizer?
  var waitingForPolkit: [UInt64: WaitingForPolkit] = [:]
  var nextPolkitCheck: UInt64 = 1

  // The shutdown sequence and the timers (Server+Lifecycle.swift).
  var stopping = false
  var writerStopped = false
  /// Joined once the writer has stopped (`Writer.Started.thread`).
  let writerThread: pthread_t?
  var readerStopped = false
  /// Once the reader is told to stop, no new frame is taken and no replay
  /// page or history read is asked for; requests already framed still run
  /// (a write is refused `Overloaded` once the writer is told to stop).
  var stopSentToReader = false
  var stopSentToWriter = false
  var stopDeadline = 0.0
  var acceptPausedUntil = 0.0
  var nextWatchdog = 0.0
  var epollFailed = false

  // Buffers reused from turn to turn.
  var events = [UInt32](repeating: 0, count: 256)
  /// Where an answer that goes straight out is written, then copied into
  /// its connection's queue (`Connection.writeDirectly`): one buffer for
  /// every connection, kept from answer to answer.
  var scratch = JSONWriter(capacity: 4096)
  var tokens = [UInt64](repeating: 0, count: 256)
  var readBuffer = [UInt8](repeating: 0, count: Server.readChunk)

  /// The loop over `listener`, starting from the switches as the writer
  /// loaded them (`started`), under `catalog` and `access`; it starts the
  /// log reader and config reader threads.
  init(
    listener: Listener, databasePath: String, configDirectory: String, catalog: Catalog,
    access: AccessRules, started: Writer.Started, jobs: BlockingQueue<WriterJob>,
    outputs: BlockingQueue<WriterOutput>, outputSpares: BlockingQueue<WriterOutput.Spare>,
    wakeFD: Int32, signalFD: Int32, notifier: Notifier, log: Log,
    varlinkListener: Listener? = nil
  ) throws {
    self.listener = listener
    self.varlinkListener = varlinkListener
    self.databasePath = databasePath
    self.configDirectory = configDirectory
    self.configReader = ConfigReader(directory: configDirectory, log: log, writerJobs: jobs)
    self.catalog = catalog
    self.access = access
    self.records = started.snapshot.records
    self.userValues = started.userValues
    self.reconciling = started.reconciling
    self.writerThread = started.thread
    self.revision = started.snapshot.revision
    self.oldestRetained = started.snapshot.oldest
    self.resumeFloor = started.resumeFloor
    self.jobs = jobs
    self.outputs = outputs
    self.outputSpares = outputSpares
    self.wakeFD = wakeFD
    self.signalFD = signalFD
    self.folderWatch = started.folderWatch
    self.notifier = notifier
    self.log = log
    self.limits = Limits(catalog.settings)
    backlogPerUser = BacklogPerUser(limit: limits.backlogPerUser)
    self.encodings = SwitchEncodings(
      sortedKeys: catalog.sortedKeys, isUserScoped: { catalog.switches[$0]?.scope == .user })
    epoll = shim_epoll_create()
    guard epoll >= 0 else { throw SystemError.last("epoll_create1") }
    register(listener.fd, token: Self.listenerToken, events: UInt32(SHIM_EPOLLIN))
    if let varlinkListener {
      register(varlinkListener.fd, token: Self.varlinkListenerToken, events: UInt32(SHIM_EPOLLIN))
    }
    // Edge-triggered: each write of a wake-up is reported once, so the loop
    // never reads the eventfd (a system call per commit fewer); its count
    // only grows, by one a wake-up, and 2^64 is never reached.
    register(wakeFD, token: Self.wakeToken, events: UInt32(SHIM_EPOLLIN) | SHIM_EPOLLET)
    if signalFD >= 0 { register(signalFD, token: Self.signalToken, events: UInt32(SHIM_EPOLLIN)) }
    // Taken over only once polled here: else the writer goes on reading it.
    if let folderWatch,
      register(folderWatch.descriptor, token: Self.folderWatchToken, events: UInt32(SHIM_EPOLLIN))
    {
      folderWatch.handOver()
    }
    // The reader wakes the loop through the writer's eventfd: one wake-up
    // drains both threads' outputs.
    let readerOutputs = self.readerOutputs
    try LogReader.start(databasePath: databasePath, jobs: readerJobs, spares: readerSpares) {
      output in
      readerOutputs.push(output)
      var one: UInt64 = 1
      _ = write(wakeFD, &one, 8)
    }
  }

  /// Adds `fd` to the loop's epoll set; false when epoll refused it.
  @discardableResult
  func register(_ fd: Int32, token: UInt64, events: UInt32) -> Bool {
    shim_epoll_ctl(epoll, Int32(SHIM_EPOLL_ADD), fd, events, token) == 0
  }
}
