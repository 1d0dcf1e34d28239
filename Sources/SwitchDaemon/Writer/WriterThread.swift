import CShim
import Glibc
import SwitchCore
import SwitchStore
import SwitchSystem

extension Writer {
  /// What the writer's thread hands back once the database is open.
  struct Started: Sendable {
    var snapshot: (records: KeyTable<SwitchRecord>, revision: Int64, oldest: Int64?)
    /// Every user's own values of user-scope switches.
    var userValues: UserValues
    /// How many switches the start's reconcile is applying: `status` says
    /// so from the first request, before the loop hears from the writer.
    var reconciling: Int
    /// The writer's thread, which the loop joins once the writer has said
    /// it stopped (`Server.finishShutdown`): the writer's last releases
    /// (its tables, its share of the catalog) then always come before
    /// switchd frees the rest and exits. Detached, they raced `exit`, and
    /// whichever thread let the catalog go last freed it or nobody did: a
    /// count of switchd's instructions over its life moved by ~1M from run
    /// to run with 1,000 switches.
    var thread: pthread_t? = nil
    /// That thread's kernel id (what /proc/self/task lists).
    var threadID: Int32 = 0
    /// The watch on the database's folder, which the loop reads instead
    /// of the writer before each commit (`FolderWatch`).
    var folderWatch: FolderWatch? = nil
    /// No watch resumes from before this revision: the database was
    /// restored from a backup (`SwitchStore.markRestored`); 0 if never.
    var resumeFloor: Int64 = 0
  }

  /// Starts the writer's thread, which opens the database and then serves
  /// `jobs`, handing each output to `outputs` and waking the loop through
  /// `wakeFD`; the loop gives the outputs' arrays back through
  /// `outputSpares`. The writer is built on that thread and never leaves
  /// it: only Sendable values cross, so it needs no `@unchecked Sendable`.
  /// - Returns: the switches as the writer loaded them, once it has, and
  ///   the thread, to join after the writer has stopped.
  /// - Throws: why the database could not be opened (the thread has ended).
  static func startThread(
    databasePath: String, configDirectory: String, catalog: Catalog, access: AccessRules,
    log: Log, jobs: BlockingQueue<WriterJob>, outputs: BlockingQueue<WriterOutput>,
    outputSpares: BlockingQueue<WriterOutput.Spare>, wakeFD: Int32,
    announced: (record: AnnouncedRevision, previous: Int64?)? = nil
  ) throws -> Started {
    let started = BlockingQueue<Result<Started, any Error>>()
    let thread = SwitchSystem.startJoinableThread(named: "writer") {
      let writer: Writer
      do {
        writer = try Writer.start(
          databasePath: databasePath, configDirectory: configDirectory, catalog: catalog,
          access: access, log: log, jobs: jobs, announced: announced)
        writer.applying.reconcilingReported = writer.applying.reconciling.count
        writer.outputSpares = outputSpares
        started.push(
          .success(
            Started(
              snapshot: writer.snapshot, userValues: writer.users.values,
              reconciling: writer.applying.reconcilingReported, threadID: shim_thread_id(),
              folderWatch: writer.store.folderWatch, resumeFloor: writer.resumeFloor)))
      } catch {
        started.push(.failure(error))
        return
      }
      writer.run(jobs: jobs) { output in
        // Moved into the queue: a copy released after the wake-up below
        // raced the loop, which then found the output's arrays shared and
        // copied the answers (about half the outputs, callgrind).
        outputs.push(consume output)
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
      }
    }
    do {
      var writer = try started.takeAll()[0].get()
      writer.thread = thread
      return writer
    } catch {
      pthread_join(thread, nil)  // it has ended
      throw error
    }
  }
}
