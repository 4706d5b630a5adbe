package state

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// maxPrepared bounds how many statements a store keeps prepared. The
// store's queries are fixed strings, a few dozen; a query past the bound
// is run unprepared, as before, rather than growing the cache.
const maxPrepared = 128

// preparedDB is the store's database with each query prepared once and
// kept: SQLite parses and plans a statement at every prepare, and core
// runs the same few statements at every turn, where modernc's driver
// would prepare each afresh. Queries run outside a transaction go through
// it, and a transaction's through keptTx.
type preparedDB struct {
	*sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
	// room is told of a write's error, and says whether the write is
	// worth trying again ([Store.roomFor]: the disk was full, and the
	// store let go of its reserve for it); nil says never.
	room func(error) bool
}

func newPreparedDB(db *sql.DB) *preparedDB {
	return &preparedDB{DB: db, stmts: map[string]*sql.Stmt{}}
}

// prepared is query's kept statement, prepared now if it was not yet, or
// nil when the cache is full (or the store closed) and query should run
// unprepared. A query that fails to prepare is not kept: the error comes
// from running it unprepared, as it would have.
func (d *preparedDB) prepared(ctx context.Context, query string) *sql.Stmt {
	stmt, full := d.kept(query)
	if stmt != nil || full {
		return stmt
	}
	// Prepared outside the lock: preparing waits for the connection, which
	// a transaction may hold.
	stmt, err := d.DB.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if kept, ok := d.stmts[query]; ok || d.stmts == nil || len(d.stmts) >= maxPrepared {
		stmt.Close()
		return kept
	}
	d.stmts[query] = stmt
	return stmt
}

// kept is query's kept statement, or nil with whether the cache is full
// (or the store closed), so that query is not to be kept.
func (d *preparedDB) kept(query string) (stmt *sql.Stmt, full bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stmts[query], d.stmts == nil || len(d.stmts) >= maxPrepared
}

// retried runs write, and once more when room says it is worth it.
func (d *preparedDB) retried(write func() error) error {
	err := write()
	if err != nil && d.room != nil && d.room(err) {
		err = write()
	}
	return err
}

// ExecContext runs query, prepared once; a write that found the disk
// full is tried again once room is made for it.
func (d *preparedDB) ExecContext(ctx context.Context, query string, args ...any) (res sql.Result, err error) {
	err = d.retried(func() error {
		if stmt := d.prepared(ctx, query); stmt != nil {
			res, err = stmt.ExecContext(ctx, args...)
		} else {
			res, err = d.DB.ExecContext(ctx, query, args...)
		}
		return err
	})
	return res, err
}

// QueryContext runs query, prepared once.
func (d *preparedDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if stmt := d.prepared(ctx, query); stmt != nil {
		return stmt.QueryContext(ctx, args...)
	}
	return d.DB.QueryContext(ctx, query, args...)
}

// QueryRowContext runs query, prepared once.
func (d *preparedDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if stmt := d.prepared(ctx, query); stmt != nil {
		return stmt.QueryRowContext(ctx, args...)
	}
	return d.DB.QueryRowContext(ctx, query, args...)
}

// keptTx is a transaction running the store's kept statements
// (Tx.StmtContext), which it would otherwise prepare afresh each time.
// A query not kept yet runs unprepared and is prepared once the
// transaction is over (keepMissed): preparing waits for the store's one
// connection, which the transaction holds.
type keptTx struct {
	tx     *sql.Tx
	db     *preparedDB
	missed []string
}

// stmt is query's kept statement within the transaction, or nil when it
// has none yet.
func (t *keptTx) stmt(ctx context.Context, query string) *sql.Stmt {
	kept, _ := t.db.kept(query)
	if kept == nil {
		t.missed = append(t.missed, query)
		return nil
	}
	return t.tx.StmtContext(ctx, kept)
}

// ExecContext runs query in the transaction, prepared once.
func (t *keptTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if stmt := t.stmt(ctx, query); stmt != nil {
		return stmt.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

// QueryRowContext runs query in the transaction, prepared once.
func (t *keptTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if stmt := t.stmt(ctx, query); stmt != nil {
		return stmt.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

// keepMissed prepares, once the transaction is over, the queries it ran
// unprepared, for the next transaction to run kept.
func (t *keptTx) keepMissed(ctx context.Context) {
	for _, query := range t.missed {
		t.db.prepared(ctx, query)
	}
}

// Close closes the kept statements, then the database.
func (d *preparedDB) Close() error {
	d.mu.Lock()
	stmts := d.stmts
	d.stmts = nil
	d.mu.Unlock()
	var errs []error
	for _, stmt := range stmts {
		errs = append(errs, stmt.Close())
	}
	return errors.Join(append(errs, d.DB.Close())...)
}
