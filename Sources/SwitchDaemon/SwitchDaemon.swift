// SwitchDaemon: the server that carries the rules SwitchCore decides.
//
// Threads: the event loop (`Server`, the caller's thread) owns every
// connection, watch and the loop's copy of the switches; the writer
// (`Writer`, its own thread) owns the read-write SQLite connection and the
// authoritative copy; the log reader (`LogReader`, its own thread) owns the
// read-only connection and reads the change log for `history` and
// `watch since`. They meet the loop at queues: jobs go to each thread
// (`BlockingQueue<WriterJob>`, `BlockingQueue<ReaderJob>`), results come
// back (`BlockingQueue<WriterOutput>`, `BlockingQueue<ReaderOutput>`, with
// one eventfd to wake the loop). The writer is built on its own thread
// (`Writer.startThread`) and never leaves it. Nothing else is shared but the
// thread-safe `Log`, so there is no lock order to get wrong, and the loop
// never touches SQLite.
//
// One daemon per database: `switches.db.lock` beside the database is
// locked (flock) before SQLite opens it and held until exit. System calls go
// through the SwitchSystem target (EINTR, sockaddr_un, owned descriptors,
// trusted directories) and CShim (what Glibc's module hides).
//
// Rooms, one folder a thread or job:
//   Daemon/  start-up, flags, the log, systemd's notify socket, the queues threads meet at
//   Config/  reading a configuration directory (ConfigLoader) and the config reader thread
//   Loop/    the event loop: connections, framing, dispatch, watches, publishing
//   Writer/  the writer thread: group commit, configuration changes, apply bookkeeping
//   Reader/  the log reader thread (history pages, `watch since` replays), backups
//   Apply/   the threads that run apply commands
//
// A write: decode → authorize → writer decides with `Rules.decide` →
// one transaction for every write queued (group commit) → the loop
// publishes the events → answers. A read is answered from the loop's copy
// and never waits for a sync; a read of the log is answered when the
// reader's page comes back, and the connection's later requests wait for it.
