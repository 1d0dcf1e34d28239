// SwitchCore: the switch rules as plain values and functions. No I/O at all.
//
// Everything that decides what a call may do lives here: key syntax
// (`SwitchKey`), the state a change alters (`SwitchState`), who holds or
// disables a switch and why, precedence (disabled wins over read-only), who
// may do what (`Privilege`, `Caller`, `WritersGroup`), the words for a
// boolean (`BooleanWord`), and no-op detection (`Rules.decide`). The daemon
// carries bytes and transactions; it never re-implements a rule.
//
// Configuration is parsed here too (`KeyFile`, `Catalog`), from text the
// daemon reads, so the rules about schema and policy files stay with the
// rest of the rules and can be tested and fuzzed without a disk.
