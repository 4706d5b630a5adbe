package state

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
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
		if err := s.Receive(ctx, "telegram", []InboxItem{{ID: int64(i + 1), Body: []byte("{}")}}); err != nil {
			t.Fatal(err)
		}
		if err := s.StartTurn(ctx, TurnStart{ID: turn, Kind: "chat", Started: now}); err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for range i + 1 {
			id, _, err := s.Admit(ctx, Admitted{Transport: "telegram", Chat: "1", Text: "hi", At: now})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := s.TakeUp(ctx, turn, ids); err != nil {
			t.Fatal(err)
		}
		if err := s.FinishTurn(ctx, TurnEnd{ID: turn, Ended: now, Outcome: "ok"}); err != nil {
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
