package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// MaxKVValueBytes caps one value of the key-value table, which holds
// core's own small state (the mood), not documents.
const MaxKVValueBytes = 64 << 10

// ErrValueTooBig is wrapped by Put when a value is longer than
// MaxKVValueBytes.
var ErrValueTooBig = errors.New("value too big")

// Get returns the value stored under key; ok is false when there is none.
func (s *Store) Get(ctx context.Context, key string) (value []byte, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT value FROM kv WHERE key = ?`, key).Scan(&value)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("read %q: %w", key, err)
	}
	return value, true, nil
}

// Put stores value under key, replacing what was there. A value longer
// than MaxKVValueBytes is refused with ErrValueTooBig.
func (s *Store) Put(ctx context.Context, key string, value []byte) error {
	if err := s.writable("put"); err != nil {
		return err
	}
	switch {
	case key == "":
		return errors.New("put: no key given")
	case len(value) > MaxKVValueBytes:
		return fmt.Errorf("put %q: %w: %d bytes, at most %d", key, ErrValueTooBig, len(value), MaxKVValueBytes)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
		key, blob(value)); err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	return nil
}
