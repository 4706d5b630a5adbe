// Package journal is a log/slog handler that audits to systemd's journal
// with structured fields, so that `journalctl SHELLDON_TURN=<id>` tells one
// turn's whole story across core, broker, worker and panel.
//
// Each record becomes one journal entry: MESSAGE is the record's message,
// PRIORITY follows the level, SYSLOG_IDENTIFIER names the actor
// ("shelldon-core"), CODE_FILE/CODE_LINE/CODE_FUNC say where it was logged
// when AddSource is set, and every attribute becomes a field of its own
// (see [FieldName]). The record's time goes in SHELLDON_TIME, the name
// slog.TimeKey maps to, because journald stamps an entry only when it
// arrives. journal.Send takes the fields as a map, so when two attributes
// of one record map to the same field (or an attribute is named "time")
// the last one wins.
//
// [New] picks this handler only where journald listens; elsewhere (a
// development machine, a test) it hands back the fallback handler, text on
// stderr by default. A send that fails or hangs never costs the caller
// more than a short bound: the record is written once to the fallback
// instead and counted (see [Handler.SendFailures]).
package journal
