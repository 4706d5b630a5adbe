package state

import (
	"context"
	"fmt"
	"testing"
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
