package state

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"shelldon/contracts"
)

// MaxParkedApprovalBytes caps the JSON of a parked call and its
// conversation together, so one runaway conversation cannot bloat the
// database that every turn reads.
const MaxParkedApprovalBytes = 4 << 20

var (
	// ErrNoApproval is wrapped when no call is parked for a turn: it never
	// was, or it has already been taken or expired.
	ErrNoApproval = errors.New("no parked approval")
	// ErrApprovalExists is wrapped by ParkApproval when the turn already
	// has a parked call; the first one stays.
	ErrApprovalExists = errors.New("turn already has a parked approval")
	// ErrApprovalExpired is wrapped by TakeApproval when the parked call
	// outlived its expiry. The row is gone all the same.
	ErrApprovalExpired = errors.New("parked approval expired")
	// ErrCorruptApproval is wrapped when a parked row's call or messages
	// no longer decode or no longer pass the checks they were parked under.
	ErrCorruptApproval = errors.New("parked approval is corrupt")
)

// PendingApproval is a RISKY call parked until the owner decides.
type PendingApproval struct {
	// Turn is the id of the turn that parked the call; at most one call
	// is parked per turn.
	Turn string
	Call contracts.ToolCall
	// Summary is the policy's note on the call's risk.
	Summary string
	// Messages is the conversation as parked, ending with the assistant
	// message that asked for Call.
	Messages []contracts.Message
	// Transport and Chat say where the owner is asked and where the
	// resumed turn answers.
	Transport string
	Chat      string
	Created   time.Time
	// Expires is when the call stops being honoured, to the millisecond.
	Expires time.Time
}

// expired reports whether a is no longer to be honoured at now.
func (a PendingApproval) expired(now time.Time) bool {
	return a.Expires.UnixMilli() <= now.UnixMilli()
}

// check holds a to what a worker may propose (contracts.RequestToolApproval),
// both when it is parked and when it is read back.
func (a PendingApproval) check() error {
	return contracts.RequestToolApproval{Call: a.Call, Summary: a.Summary, Messages: a.Messages}.Validate()
}

const approvalColumns = `turn, call, summary, messages, transport, chat, created_at, expires_at`

// ParkApproval parks a RISKY call until the owner decides. The call, summary
// and messages must pass contracts.RequestToolApproval validation, Expires
// must come after Created, and the call and messages together must encode
// to at most MaxParkedApprovalBytes of JSON. A turn that already has a
// parked call gets ErrApprovalExists.
func (s *Store) ParkApproval(ctx context.Context, a PendingApproval) error {
	if err := s.writable("park approval"); err != nil {
		return err
	}
	if a.Turn == "" {
		return errors.New("park approval: no turn id")
	}
	if err := a.check(); err != nil {
		return fmt.Errorf("park approval of turn %q: %w", a.Turn, err)
	}
	if a.Created.IsZero() || !a.Expires.After(a.Created) {
		return fmt.Errorf("park approval of turn %q: expiry %v is not after creation %v", a.Turn, a.Expires, a.Created)
	}
	call, err := json.Marshal(a.Call)
	if err != nil {
		return fmt.Errorf("park approval of turn %q: encode call: %w", a.Turn, err)
	}
	messages, err := json.Marshal(a.Messages)
	if err != nil {
		return fmt.Errorf("park approval of turn %q: encode messages: %w", a.Turn, err)
	}
	if size := len(call) + len(messages); size > MaxParkedApprovalBytes {
		return fmt.Errorf("park approval of turn %q: call and messages are %d bytes of JSON, more than the %d allowed", a.Turn, size, MaxParkedApprovalBytes)
	}
	res, err := s.db.ExecContext(ctx,
		`INSERT INTO pending_approvals (`+approvalColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		 ON CONFLICT (turn) DO NOTHING`,
		a.Turn, string(call), a.Summary, string(messages), a.Transport, a.Chat, a.Created.UnixMilli(), a.Expires.UnixMilli())
	if err != nil {
		return fmt.Errorf("park approval of turn %q: %w", a.Turn, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("park approval of turn %q: %w", a.Turn, err)
	}
	if n == 0 {
		return fmt.Errorf("park approval of turn %q: %w", a.Turn, ErrApprovalExists)
	}
	return nil
}

// PendingApproval returns the call parked for turn without taking it,
// expired or not; ErrNoApproval when there is none. A corrupt row comes
// back with what could be read of it and an error wrapping
// ErrCorruptApproval.
func (s *Store) PendingApproval(ctx context.Context, turn string) (PendingApproval, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM pending_approvals WHERE turn = ?`, turn)
	a, err := scanApproval(row)
	if err != nil {
		return a, approvalError("read approval", turn, err)
	}
	return a, nil
}

// TakeApproval removes the call parked for turn and returns it, in one
// statement, so of two takes only one gets it; the other gets
// ErrNoApproval. A call that expired by now is removed too and returned
// with an error wrapping ErrApprovalExpired, so the owner can be told what
// lapsed; it must not run. A corrupt row is removed as well and returned
// as PendingApproval reads it.
func (s *Store) TakeApproval(ctx context.Context, turn string, now time.Time) (PendingApproval, error) {
	if err := s.writable("take approval"); err != nil {
		return PendingApproval{}, err
	}
	// SQLite deletes every matched row on the statement's first step, so
	// the row is gone whether or not it reads back cleanly.
	row := s.db.QueryRowContext(ctx, `DELETE FROM pending_approvals WHERE turn = ? RETURNING `+approvalColumns, turn)
	a, err := scanApproval(row)
	if err != nil {
		return a, approvalError("take approval", turn, err)
	}
	if a.expired(now) {
		return a, fmt.Errorf("take approval of turn %q: %w at %s", turn, ErrApprovalExpired, a.Expires.Format(time.RFC3339))
	}
	return a, nil
}

// ExpireApprovals removes every call whose expiry has come by now and
// returns them, oldest first, so the owner can be told. Corrupt rows are
// removed too and returned with what could be read of them, and the error
// then wraps ErrCorruptApproval and names each of their turns.
func (s *Store) ExpireApprovals(ctx context.Context, now time.Time) ([]PendingApproval, error) {
	if err := s.writable("expire approvals"); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `DELETE FROM pending_approvals WHERE expires_at <= ? RETURNING `+approvalColumns, now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("expire approvals: %w", err)
	}
	expired, err := scanApprovals(rows)
	// RETURNING gives no order of its own.
	slices.SortFunc(expired, compareApprovals)
	if err != nil {
		return expired, fmt.Errorf("expire approvals: %w", err)
	}
	return expired, nil
}

// PendingApprovals returns every parked call, oldest first, expired or
// not. Corrupt rows are returned with what could be read of them, and the
// error then wraps ErrCorruptApproval and names each of their turns.
func (s *Store) PendingApprovals(ctx context.Context) ([]PendingApproval, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+approvalColumns+` FROM pending_approvals ORDER BY created_at, turn`)
	if err != nil {
		return nil, fmt.Errorf("read pending approvals: %w", err)
	}
	pending, err := scanApprovals(rows)
	if err != nil {
		return pending, fmt.Errorf("read pending approvals: %w", err)
	}
	return pending, nil
}

// approvalError gives the error of reading turn's row its context.
func approvalError(what, turn string, err error) error {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%s of turn %q: %w", what, turn, ErrNoApproval)
	case errors.Is(err, ErrCorruptApproval):
		return fmt.Errorf("%s: %w", what, err) // already names the turn
	}
	return fmt.Errorf("%s of turn %q: %w", what, turn, err)
}

// compareApprovals orders by creation, then turn id for a stable order.
func compareApprovals(a, b PendingApproval) int {
	return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Turn, b.Turn))
}

// scanApprovals reads all of rows. A corrupt row is kept with what could
// be read of it, and the error joins one ErrCorruptApproval per such row.
func scanApprovals(rows *sql.Rows) ([]PendingApproval, error) {
	defer rows.Close()
	var (
		all     []PendingApproval
		corrupt []error
	)
	for rows.Next() {
		a, err := scanApproval(rows)
		switch {
		case errors.Is(err, ErrCorruptApproval):
			corrupt = append(corrupt, err)
		case err != nil:
			return all, err
		}
		all = append(all, a)
	}
	if err := rows.Err(); err != nil {
		return all, err
	}
	return all, errors.Join(corrupt...)
}

// scanApproval reads one row. When its JSON does not decode, or decodes to
// something ParkApproval would have refused, it returns the plain columns
// and an error that wraps ErrCorruptApproval and names the turn.
func scanApproval(row interface{ Scan(...any) error }) (PendingApproval, error) {
	var (
		a                PendingApproval
		call, messages   string
		created, expires int64
	)
	if err := row.Scan(&a.Turn, &call, &a.Summary, &messages, &a.Transport, &a.Chat, &created, &expires); err != nil {
		return PendingApproval{}, err
	}
	a.Created = time.UnixMilli(created)
	a.Expires = time.UnixMilli(expires)
	decoded := a
	if err := json.Unmarshal([]byte(call), &decoded.Call); err != nil {
		return a, fmt.Errorf("turn %q: %w: call: %w", a.Turn, ErrCorruptApproval, err)
	}
	if err := json.Unmarshal([]byte(messages), &decoded.Messages); err != nil {
		return a, fmt.Errorf("turn %q: %w: messages: %w", a.Turn, ErrCorruptApproval, err)
	}
	if err := decoded.check(); err != nil {
		return a, fmt.Errorf("turn %q: %w: %w", a.Turn, ErrCorruptApproval, err)
	}
	return decoded, nil
}
