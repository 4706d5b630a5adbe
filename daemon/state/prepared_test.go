package state

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"modernc.org/sqlite"
)

// TestStatementsArePreparedOnceAndBounded: a query the store runs again
// reuses the statement prepared the first time, the cache stops at
// maxPrepared with the queries past it still answered, and closing the
// store closes what it kept.
func TestStatementsArePreparedOnceAndBounded(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	const query = `SELECT value FROM kv WHERE key = ?`
	if err := s.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if v, _, err := s.Get(ctx, "k"); err != nil || string(v) != "v" {
			t.Fatalf("KV(k) = %q, %v; want v", v, err)
		}
	}
	first := s.db.prepared(ctx, query)
	if first == nil || s.db.prepared(ctx, query) != first {
		t.Fatalf("the kv query was not kept prepared: %v", first)
	}
	for i := range maxPrepared + 10 {
		var n int
		if err := s.db.QueryRowContext(ctx, fmt.Sprintf(`SELECT %d`, i)).Scan(&n); err != nil || n != i {
			t.Fatalf("SELECT %d = %d, %v", i, n, err)
		}
	}
	if got := len(s.db.stmts); got != maxPrepared {
		t.Errorf("%d statements kept, want the bound %d", got, maxPrepared)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.db.stmts != nil {
		t.Errorf("a closed store still keeps %d statements", len(s.db.stmts))
	}
}

// TestPreparedStatementSeesASchemaChange: a kept statement prepared
// before a migration changed its table answers with the table as it is
// now (SQLite prepares it again), not as it was.
func TestPreparedStatementSeesASchemaChange(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE grown (a INTEGER)`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO grown (a) VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	columns := func() []string {
		rows, err := s.db.QueryContext(ctx, `SELECT * FROM grown`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		return cols
	}
	if got := columns(); len(got) != 1 {
		t.Fatalf("columns before = %v", got)
	}
	if _, err := s.db.ExecContext(ctx, `ALTER TABLE grown ADD COLUMN b TEXT`); err != nil {
		t.Fatal(err)
	}
	if got := columns(); len(got) != 2 {
		t.Errorf("columns after ALTER = %v, want a and b", got)
	}
}

// TestATransactionRunsKeptStatements: the statements of a turn's
// transactions (receiving an update, finishing the turn) are kept like
// the rest, not prepared afresh at every turn, and marking admitted
// messages is one kept statement whatever their number.
func TestATransactionRunsKeptStatements(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	now := time.Now()
	for i := range 3 {
		turn := fmt.Sprintf("t%d", i)
		if err := s.Queues().Receive(ctx, "telegram", []InboxItem{{ID: int64(i + 1), Body: []byte("{}")}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Turns().Start(ctx, TurnStart{ID: turn, Kind: "chat", Started: now}); err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for range i + 1 {
			id, _, err := s.Intake().Admit(ctx, Admitted{Transport: "telegram", Chat: "1", Text: "hi", At: now})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := s.Intake().TakeUp(ctx, turn, ids); err != nil {
			t.Fatal(err)
		}
		if err := s.Turns().Finish(ctx, TurnEnd{ID: turn, Ended: now, Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"INSERT OR IGNORE INTO transport_inbox", "UPDATE turns SET ended_at", "UPDATE admitted SET turn"} {
		var kept int
		for query := range s.db.stmts {
			if strings.Contains(query, want) {
				kept++
			}
		}
		if kept != 1 {
			t.Errorf("%d statements kept for %q, want 1", kept, want)
		}
	}
	var marked int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM admitted WHERE turn != ''`).Scan(&marked); err != nil || marked != 6 {
		t.Errorf("%d admitted messages marked taken up (%v), want 6", marked, err)
	}
}

// TestUnhandledIsNotCompiledAgain: the telegram transport asks for its
// next updates at every turn, as many as its batch and those it passed
// over, a count that changes; the kept statement runs as it is, not
// compiled again for each count (SQLite 3.54 compiles a statement again
// when a bound LIMIT changes, its value being a hint to the planner).
// SQLite asks the authorizer at each compile.
func TestUnhandledIsNotCompiledAgain(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	conn, err := s.db.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var compiled atomic.Int64
	err = conn.Raw(func(driverConn any) error {
		return driverConn.(sqlite.AuthorizerRegisterer).RegisterAuthorizer(func(action sqlite.AuthorizerActionCode, _, _, _, _ string) sqlite.AuthorizerReturnCode {
			if action == sqlite.AuthSelect {
				compiled.Add(1)
			}
			return sqlite.AuthorizerOK
		})
	})
	conn.Close() // the store's one connection, authorizer and all, back to it
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Queues().Receive(ctx, "telegram", []InboxItem{{ID: 1, Body: []byte("{}")}, {ID: 2, Body: []byte("{}")}, {ID: 3, Body: []byte("{}")}}); err != nil {
		t.Fatal(err)
	}
	unhandled := func(limit int) {
		items, err := s.Queues().Unhandled(ctx, "telegram", limit)
		if err != nil || len(items) != limit || items[0].ID != 1 {
			t.Fatalf("Unhandled(%d) = %v, %v; want the first %d", limit, items, err, limit)
		}
	}
	unhandled(1)
	first := compiled.Load()
	for _, limit := range []int{2, 1, 3} {
		unhandled(limit)
	}
	if again := compiled.Load() - first; again != 0 {
		t.Errorf("three more reads compiled %d SELECTs again, want 0", again)
	}
}
