// SwitchProtocol: the wire contract, defined once (docs/protocol.md).
//
// Bytes in, bytes out: JSON values (`JSONValue`, our own strict parser and
// writer), NDJSON framing (`LineFramer`), JSON-RPC 2.0 envelopes
// (`RequestEnvelope`, `ResponseMessage`), the methods and their typed params
// (`Method`, `Call`), the objects results and events carry (`WireEncoding`),
// each method's result object (`ResultEncoding`), and the error codes
// (`RPCError`). Every wire name is spelled here and only here; the daemon,
// the CLI and the tests all use these definitions. Nothing here knows of
// sockets or SQLite.
