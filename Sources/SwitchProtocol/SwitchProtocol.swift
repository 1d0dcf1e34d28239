// SwitchProtocol: the wire contract, defined once (docs/protocol.md).
//
// Bytes in, bytes out: JSON values (`JSONValue`, our own strict parser and
// writer), NDJSON framing (`LineFramer`), JSON-RPC 2.0 envelopes
// (`RequestDecoder`, `ResponseEncoding`, `ClientMessage`), the methods and
// their typed params (`Method`, `Call`), the objects results and events
// carry (`WireEncoding` writes them, `WireObjects` decodes them), each
// method's result (`ResultEncoding` writes it, `Results` decodes it), and
// the error codes (`RPCError`). Every wire name is spelled here and only
// here (`WireField`); the daemon, the CLI and the tests all use these
// definitions. Nothing here knows of sockets or SQLite.
