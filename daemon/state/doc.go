// Package state is the single writer of shelldon's state: the SQLite
// database (conversation history, turns, learnings, parked approvals) and the files of the
// memory tree (memory/*.md, about.md, the faces file). Core owns the one
// writable Store; `shelldon turns` opens a read-only one.
//
// The Store is the database itself: open, migrations, transactions, the
// key-value table, backup, the high-water mark, the reserve on the disk.
// The data is kept by the part of its owner, a type that shares the
// store's database: Intake, Turns, History, Replies, Memories,
// Schedules, Approvals, Rules, Tools, Notices and the transports' Queues, each
// from the Store's method of its name (store.Schedules().Due(ctx, now)).
// A part holds the store in a field of its own rather than embedding it,
// so whoever is given a part (intake its *Intake, the ops their
// *Memories) reaches that part's data and nothing else of the store's.
//
// Every file write is atomic (see package atomicfile), and every database
// change is one transaction, so a crash at any point leaves either the old
// state or the new one. Where things live comes from package statedir.
package state
