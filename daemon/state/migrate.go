package state

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations are the schema's steps: applying migrations[i] takes the
// database from version i to i+1, recorded in PRAGMA user_version. A change
// to the schema is a new step appended here; a step that has shipped is
// never edited.
var migrations = []string{
	// 1: the conversation, the turns and the learnings.
	`CREATE TABLE history (
		id   INTEGER PRIMARY KEY,
		turn TEXT NOT NULL,
		role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
		text TEXT NOT NULL,
		at   INTEGER NOT NULL -- unix ms
	);
	CREATE TABLE turns (
		id             TEXT PRIMARY KEY,
		kind           TEXT NOT NULL,
		started_at     INTEGER NOT NULL, -- unix ms
		ended_at       INTEGER,          -- NULL while the turn runs
		outcome        TEXT,
		error          TEXT NOT NULL DEFAULT '',
		prompt_preview TEXT NOT NULL DEFAULT '',
		model_ms       INTEGER NOT NULL DEFAULT 0,
		total_ms       INTEGER NOT NULL DEFAULT 0,
		worker_pid     INTEGER NOT NULL DEFAULT 0,
		worker_peak_kb INTEGER NOT NULL DEFAULT 0 -- the worker's resident high-water mark
	);
	CREATE INDEX turns_by_start ON turns (started_at);
	CREATE TABLE learnings (
		id   INTEGER PRIMARY KEY,
		turn TEXT NOT NULL,
		text TEXT NOT NULL,
		tags TEXT NOT NULL DEFAULT '', -- comma-separated slugs
		at   INTEGER NOT NULL -- unix ms
	);`,
	// 2: what the launcher measured of each worker (the unit's cgroup, or
	// rusage for a child process) and how the worker ended in its words.
	`ALTER TABLE turns ADD COLUMN worker_cpu_ms INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE turns ADD COLUMN worker_exit TEXT NOT NULL DEFAULT '';`,
	// 3: how long the worker took from launch to joining the bus.
	`ALTER TABLE turns ADD COLUMN worker_join_ms INTEGER NOT NULL DEFAULT 0;`,
	// 4: RISKY calls parked until the owner decides, one per turn; call and
	// messages are JSON.
	`CREATE TABLE pending_approvals (
		turn       TEXT PRIMARY KEY,
		call       TEXT NOT NULL,
		summary    TEXT NOT NULL,
		messages   TEXT NOT NULL,
		transport  TEXT NOT NULL DEFAULT '',
		chat       TEXT NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL, -- unix ms
		expires_at INTEGER NOT NULL  -- unix ms
	);
	CREATE INDEX pending_by_expiry ON pending_approvals (expires_at);`,
	// 5: strikes against self-coded tools that failed to load or run.
	`CREATE TABLE tool_health (
		name       TEXT PRIMARY KEY,
		strikes    INTEGER NOT NULL,
		last_error TEXT NOT NULL DEFAULT '',
		updated_at INTEGER NOT NULL -- unix ms
	);`,
	// 6: what a transport (telegram, ...) keeps across restarts, keyed by
	// its name: the updates taken from its server and not yet handled, the
	// highest update id taken, the replies it must still send, where it
	// showed approval requests and how they stood (until 19), and the
	// senders it ignored.
	`CREATE TABLE transport_offsets (
		transport  TEXT PRIMARY KEY,
		highest_id INTEGER NOT NULL -- the server's update id; never lowered
	);
	CREATE TABLE transport_inbox (
		transport TEXT NOT NULL,
		id        INTEGER NOT NULL, -- the server's update id
		body      BLOB NOT NULL,
		PRIMARY KEY (transport, id)
	);
	CREATE TABLE transport_outbox (
		-- AUTOINCREMENT: ids only grow, so they give the sending order and a
		-- stale id never names a newer item.
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		transport  TEXT NOT NULL,
		kind       TEXT NOT NULL,
		body       BLOB NOT NULL,
		attempts   INTEGER NOT NULL DEFAULT 0,
		not_before INTEGER NOT NULL, -- unix ms
		created_at INTEGER NOT NULL  -- unix ms
	);
	CREATE INDEX outbox_by_transport ON transport_outbox (transport, id);
	CREATE TABLE approval_status (
		transport TEXT NOT NULL,
		turn      TEXT NOT NULL,
		state     TEXT NOT NULL CHECK (state IN ('open', 'tapped', 'closed')),
		outcome   TEXT NOT NULL DEFAULT '',
		at        INTEGER NOT NULL, -- unix ms, when it came to its state
		PRIMARY KEY (transport, turn)
	);
	CREATE INDEX approval_status_by_state ON approval_status (state, at);
	CREATE TABLE approval_messages (
		id         INTEGER PRIMARY KEY, -- the order recorded
		transport  TEXT NOT NULL,
		turn       TEXT NOT NULL,
		chat       TEXT NOT NULL,
		message_id INTEGER NOT NULL,
		html       TEXT NOT NULL
	);
	CREATE INDEX approval_messages_by_turn ON approval_messages (transport, turn, id);
	CREATE TABLE ignored_senders (
		transport TEXT NOT NULL,
		sender    TEXT NOT NULL,
		count     INTEGER NOT NULL,
		last_at   INTEGER NOT NULL, -- unix ms
		PRIMARY KEY (transport, sender)
	);
	CREATE INDEX ignored_by_last ON ignored_senders (last_at);`,
	// 7: the turns the pet starts itself on a schedule, the small state core
	// keeps for itself (the mood), and an index for counting the turns of a
	// kind against the daily budget of self-driven turns.
	`CREATE TABLE schedules (
		-- AUTOINCREMENT: ids only grow, so the id of a cancelled schedule
		-- never names a newer one.
		id          INTEGER PRIMARY KEY AUTOINCREMENT,
		text        TEXT NOT NULL,
		next_at     INTEGER NOT NULL,         -- unix ms
		every       TEXT NOT NULL DEFAULT '', -- schedule.Every's String; '' for once
		transport   TEXT NOT NULL DEFAULT '',
		chat        TEXT NOT NULL DEFAULT '',
		created_at  INTEGER NOT NULL, -- unix ms
		last_run_at INTEGER           -- unix ms; NULL until it first ran
	);
	CREATE INDEX schedules_by_next ON schedules (next_at);
	CREATE TABLE kv (
		key   TEXT PRIMARY KEY,
		value BLOB NOT NULL
	);
	CREATE INDEX turns_by_kind ON turns (kind, started_at);`,
	// 8: every request the owner decides on is a typed record: what it is
	// (a call, a promotion, a change set), exactly what the owner is shown
	// (title, detail), the digest of exactly what will execute, a payload
	// for what is not a call, and every place it was shown. A row from
	// before has no digest; core renews it at start. A promotion from
	// before kept its code in the workspace, which is no longer trusted.
	`ALTER TABLE pending_approvals ADD COLUMN kind TEXT NOT NULL DEFAULT 'call';
	ALTER TABLE pending_approvals ADD COLUMN title TEXT NOT NULL DEFAULT '';
	ALTER TABLE pending_approvals ADD COLUMN detail TEXT NOT NULL DEFAULT '';
	ALTER TABLE pending_approvals ADD COLUMN digest TEXT NOT NULL DEFAULT '';
	ALTER TABLE pending_approvals ADD COLUMN payload TEXT NOT NULL DEFAULT '';
	ALTER TABLE pending_approvals ADD COLUMN shown TEXT NOT NULL DEFAULT '[]';
	UPDATE pending_approvals SET kind = 'promotion' WHERE turn LIKE 'promote-%';`,
	// 9: what each turn's model calls cost in tokens, as the providers
	// counted them; 0 for the turns before, and where none said.
	`ALTER TABLE turns ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE turns ADD COLUMN completion_tokens INTEGER NOT NULL DEFAULT 0;`,
	// 10: the owner's messages core admitted, kept until their turn has
	// answered, so that a stop, a crash or a power cut mid-turn loses
	// none; a transport's own reference (a Telegram update id) is kept
	// after the answer a while, so a message the transport delivers again
	// is recognised.
	`CREATE TABLE admitted (
		id          INTEGER PRIMARY KEY AUTOINCREMENT,
		transport   TEXT NOT NULL,
		chat        TEXT NOT NULL DEFAULT '',
		ref         TEXT NOT NULL DEFAULT '', -- the transport's id of the message; '' when it has none
		text        TEXT NOT NULL,
		at          INTEGER NOT NULL, -- unix ms
		turn        TEXT NOT NULL DEFAULT '', -- the turn taking it up; '' while it waits
		tries       INTEGER NOT NULL DEFAULT 0, -- how many turns took it up
		answered_at INTEGER                   -- unix ms; NULL until a turn answered it
	);
	CREATE UNIQUE INDEX admitted_by_ref ON admitted (transport, ref) WHERE ref != '';
	CREATE INDEX admitted_unanswered ON admitted (answered_at, id);`,
	// 11: a transport's outbox is in lanes (a chat's replies, its edits, the
	// command menu), each sent in order and none waiting for another; an
	// item from before is in the lane '', which goes in order as the whole
	// queue did. The replies given up on are counted per lane until the
	// owner is told.
	`ALTER TABLE transport_outbox ADD COLUMN lane TEXT NOT NULL DEFAULT '';
	DROP INDEX outbox_by_transport;
	CREATE INDEX outbox_by_lane ON transport_outbox (transport, lane, id);
	CREATE TABLE transport_undelivered (
		transport TEXT NOT NULL,
		lane      TEXT NOT NULL,
		count     INTEGER NOT NULL, -- replies given up on, not yet told
		PRIMARY KEY (transport, lane)
	);`,
	// 12: each turn's tokens per provider that answered it (a turn may go
	// through several in the fallback chain), in the order they first
	// answered, and dated by the turn's start, as the turns of a day are
	// counted: the index covers the sums of a day or a month per
	// provider.
	`CREATE TABLE turn_usage (
		turn              TEXT NOT NULL,
		seq               INTEGER NOT NULL, -- the order the providers first answered
		provider          TEXT NOT NULL,
		started_at        INTEGER NOT NULL, -- unix ms: the turn's start
		prompt_tokens     INTEGER NOT NULL,
		completion_tokens INTEGER NOT NULL,
		PRIMARY KEY (turn, seq)
	);
	CREATE INDEX turn_usage_by_start ON turn_usage (started_at, provider, prompt_tokens, completion_tokens);
	-- The turns before knew their tokens but not the provider: state.UnknownProvider.
	INSERT INTO turn_usage (turn, seq, provider, started_at, prompt_tokens, completion_tokens)
		SELECT id, 0, '(unknown)', started_at, prompt_tokens, completion_tokens FROM turns WHERE prompt_tokens > 0 OR completion_tokens > 0;`,
	// 13: the rules the owner granted ("Always for …"): a narrow shape of
	// call that runs without asking until it expires or is revoked; one
	// rule per shape.
	`CREATE TABLE rules (
		id         INTEGER PRIMARY KEY,
		tool       TEXT NOT NULL,
		pattern    TEXT NOT NULL,
		words      TEXT NOT NULL,
		granted_at INTEGER NOT NULL, -- unix ms
		expires_at INTEGER NOT NULL, -- unix ms
		uses       INTEGER NOT NULL DEFAULT 0,
		UNIQUE (tool, pattern)
	);
	CREATE INDEX rules_by_expiry ON rules (expires_at);`,
	// 14: the turns still running, which core ends at every start (after a
	// crash there is one at most): a partial index holds only those, so the
	// start finds them without reading months of finished turns, and costs
	// a finished turn nothing to keep.
	`CREATE INDEX turns_running ON turns (ended_at) WHERE ended_at IS NULL;`,
	// 15: how often and how lately each self-coded tool was called, for
	// core to offer the ones in use in full and the rest by name; kept to
	// the maxToolUses most recent (state.Tools.Use).
	`CREATE TABLE tool_use (
		name      TEXT PRIMARY KEY,
		uses      INTEGER NOT NULL,
		last_used INTEGER NOT NULL -- unix ms
	);`,
	// 16: a schedule set by a turn that had read text from outside carries
	// that turn's mark (where the text came from), and so does every turn
	// it starts; '' for the schedules before, set by unmarked turns as
	// far as anyone knew.
	`ALTER TABLE schedules ADD COLUMN outside TEXT NOT NULL DEFAULT '';`,
	// 17: what Open found that core must tell the owner (a damaged
	// database restored, a rollback), kept until a transport took it, so
	// that a core stopped before it could tell leaves it to the next.
	`CREATE TABLE notices (
		id   INTEGER PRIMARY KEY AUTOINCREMENT,
		body TEXT NOT NULL,    -- JSON: state.Notice
		at   INTEGER NOT NULL  -- unix ms
	);`,
	// 18: the replies core routed that the transport delivering each has
	// not yet confirmed holding (sent again until it has; the messages
	// they answer are answered only then), and the keys of the replies a
	// transport took, so that one sent again is queued once.
	`CREATE TABLE replies (
		key       TEXT PRIMARY KEY,
		transport TEXT NOT NULL,
		body      TEXT NOT NULL,             -- JSON: contracts.Outbound
		messages  TEXT NOT NULL DEFAULT '[]', -- JSON: the admitted ids it answers
		at        INTEGER NOT NULL            -- unix ms
	);
	CREATE TABLE transport_keys (
		transport TEXT NOT NULL,
		key       TEXT NOT NULL,
		at        INTEGER NOT NULL, -- unix ms
		PRIMARY KEY (transport, key)
	) WITHOUT ROWID;`,
	// 19: where a request stands is the approval authority's word alone:
	// it is parked (pending_approvals) or settled, with its outcome, kept
	// a while (settled_approvals). The transports' own status of each
	// request goes; what the transports had settled is kept as settled,
	// and the messages that show a request say when they were sent, for
	// the transport to forget them in time.
	`CREATE TABLE settled_approvals (
		turn    TEXT PRIMARY KEY,
		outcome TEXT NOT NULL,
		at      INTEGER NOT NULL -- unix ms
	);
	CREATE INDEX settled_approvals_by_at ON settled_approvals (at, turn);
	INSERT INTO settled_approvals (turn, outcome, at)
		SELECT turn, max(outcome), max(at) FROM approval_status
		WHERE state = 'closed' AND outcome != '' AND turn NOT IN (SELECT turn FROM pending_approvals) GROUP BY turn;
	ALTER TABLE approval_messages ADD COLUMN at INTEGER NOT NULL DEFAULT 0; -- unix ms, when sent
	UPDATE approval_messages SET at = coalesce(
		(SELECT s.at FROM approval_status AS s WHERE s.transport = approval_messages.transport AND s.turn = approval_messages.turn),
		CAST(strftime('%s', 'now') AS INTEGER) * 1000);
	DROP TABLE approval_status;`,
}

func schemaVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var version int
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return version, nil
}

// migrate applies the steps the database lacks, each in a transaction of
// its own, and refuses a database newer than the code.
func migrate(ctx context.Context, db *sql.DB) error {
	version, err := schemaVersion(ctx, db)
	if err != nil {
		return err
	}
	if version > len(migrations) {
		return fmt.Errorf("%w: schema version %d, this shelldon knows up to %d", ErrNewerSchema, version, len(migrations))
	}
	for next := version + 1; next <= len(migrations); next++ {
		if err := applyMigration(ctx, db, next); err != nil {
			return err
		}
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, version int) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate to version %d: %w", version, err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	// Another process may have migrated between our read and our write lock.
	current, err := schemaVersion(ctx, tx)
	if err != nil {
		return err
	}
	if current >= version {
		return tx.Commit()
	}
	if _, err := tx.ExecContext(ctx, migrations[version-1]); err != nil {
		return fmt.Errorf("migrate to version %d: %w", version, err)
	}
	// PRAGMA takes no parameters; version is an int, never outside input.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", version)); err != nil {
		return fmt.Errorf("migrate to version %d: record version: %w", version, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate to version %d: commit: %w", version, err)
	}
	return nil
}
