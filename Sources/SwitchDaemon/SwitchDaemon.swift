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
// one eventfd to wake the loop). Nothing else is shared, so there is no
// lock order to get wrong, and the loop never touches SQLite.
//
// A write: decode → authorize → writer decides with `Rules.decide` →
// one transaction for every write queued (group commit) → the loop
// publishes the events → answers. A read is answered from the loop's copy
// and never waits for a sync; a read of the log is answered when the
// reader's page comes back, and the connection's later requests wait for it.
