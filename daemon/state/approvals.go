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

// MaxParkedApprovalBytes caps what one parked request holds — a call and
// its conversation, or a payload, with the detail shown — so one runaway
// conversation cannot bloat the database that every turn reads.
const MaxParkedApprovalBytes = 4 << 20

// MaxKindBytes bounds a parked request's kind: a short name the approval
// authority gives, which the store keeps without knowing what it means.
const MaxKindBytes = 64

// Audience is one place a request was shown: a transport and the chat in
// it.
type Audience struct {
	Transport string `json:"transport"`
	Chat      string `json:"chat"`
}

var (
	// ErrNoApproval is wrapped when no call is parked for a turn: it never
	// was, or it has already been taken or expired.
	ErrNoApproval = errors.New("no parked approval")
	// ErrApprovalExists is wrapped by Approvals.Park when the turn already
	// has a parked call; the first one stays.
	ErrApprovalExists = errors.New("turn already has a parked approval")
	// ErrApprovalExpired is wrapped by Approvals.Take when the parked call
	// outlived its expiry. The row is gone all the same.
	ErrApprovalExpired = errors.New("parked approval expired")
	// ErrCorruptApproval is wrapped when a parked row's call or messages
	// no longer decode or no longer pass the checks they were parked under.
	ErrCorruptApproval = errors.New("parked approval is corrupt")
)

// PendingApproval is a request parked until the owner decides: a RISKY
// call of a parked turn, or a promotion or change set, each with exactly
// what the owner was shown and the digest of what will execute. What the
// fields mean beyond storage is the approval authority's (package
// daemon/approval).
type PendingApproval struct {
	// Turn is the request's key: the id of the turn that parked a call
	// (at most one call per turn), a fresh id for anything else.
	Turn string
	// Kind names what the request asks. The store keeps it as given;
	// what each kind means, and what it must carry, is the approval
	// authority's (package daemon/approval).
	Kind string
	// Title, Summary and Detail are exactly what the owner is shown:
	// what is asked, the one-line risk note, and what will run.
	Title   string
	Summary string
	Detail  string
	// Digest is the hash of exactly what will execute; empty only in a
	// row parked before digests existed.
	Digest string
	// Call and Messages are a call's: the call, and the conversation as
	// parked, ending with the assistant message that asked for it.
	Call     contracts.ToolCall
	Messages []contracts.Message
	// Payload is what a request carries beyond a call, as JSON.
	Payload []byte
	// Transport and Chat say where the owner was asked and where the
	// resumed turn answers.
	Transport string
	Chat      string
	// Shown lists every place the request was shown; a decision is taken
	// only from one of them.
	Shown   []Audience
	Created time.Time
	// Expires is when the request stops being honoured, to the
	// millisecond.
	Expires time.Time
}

// expired reports whether a is no longer to be honoured at now.
func (a PendingApproval) expired(now time.Time) bool {
	return a.Expires.UnixMilli() <= now.UnixMilli()
}

// check holds a to what every row must carry, whatever its kind, both
// when it is parked and when it is read back: a kind; a call, when it
// carries one, what a worker may propose (contracts.RequestToolApproval);
// a payload, when it has one, JSON. What a kind must carry beyond that is
// checked by the approval authority, which reads a row that fails its
// kind's checks as damaged.
func (a PendingApproval) check() error {
	if a.Kind == "" || len(a.Kind) > MaxKindBytes {
		return fmt.Errorf("a request's kind must be 1 to %d bytes, not %d", MaxKindBytes, len(a.Kind))
	}
	if a.Call != (contracts.ToolCall{}) || len(a.Messages) > 0 {
		if err := (contracts.RequestToolApproval{Call: a.Call, Summary: a.Summary, Messages: a.Messages}).Validate(); err != nil {
			return err
		}
	}
	if len(a.Payload) > 0 && !json.Valid(a.Payload) {
		return fmt.Errorf("a %s's payload is not JSON", a.Kind)
	}
	return nil
}

const approvalColumns = `turn, kind, title, summary, detail, digest, call, messages, payload, transport, chat, shown, created_at, expires_at`

// Approvals are the approval authority's parked requests and what each
// came to once settled.
type Approvals struct{ store *Store }

// Approvals is the approval authority's part of the store.
func (s *Store) Approvals() *Approvals { return &Approvals{s} }

// Park parks a request until the owner decides. It must pass the
// checks of its kind, Expires must come after Created, and what it holds
// must encode to at most MaxParkedApprovalBytes. A key that already has a
// parked request gets ErrApprovalExists.
func (s *Approvals) Park(ctx context.Context, a PendingApproval) error {
	if err := s.store.writable("park approval"); err != nil {
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
	row, err := a.encode()
	if err != nil {
		return fmt.Errorf("park approval of turn %q: %w", a.Turn, err)
	}
	err = s.store.inTx(ctx, func(tx *keptTx) error {
		res, err := tx.ExecContext(ctx,
			`INSERT INTO pending_approvals (`+approvalColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			 ON CONFLICT (turn) DO NOTHING`, row...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrApprovalExists
		}
		// A key settled before and asked again (a resumed turn's next
		// call) is open again.
		_, err = tx.ExecContext(ctx, `DELETE FROM settled_approvals WHERE turn = ?`, a.Turn)
		return err
	})
	if err != nil {
		return fmt.Errorf("park approval of turn %q: %w", a.Turn, err)
	}
	return nil
}

// encode turns a into the columns of its row, in approvalColumns' order,
// refusing one over MaxParkedApprovalBytes.
func (a PendingApproval) encode() ([]any, error) {
	call, err := json.Marshal(a.Call)
	if err != nil {
		return nil, fmt.Errorf("encode call: %w", err)
	}
	messages, err := json.Marshal(a.Messages)
	if err != nil {
		return nil, fmt.Errorf("encode messages: %w", err)
	}
	shown, err := json.Marshal(a.Shown)
	if err != nil {
		return nil, fmt.Errorf("encode where it was shown: %w", err)
	}
	if size := len(call) + len(messages) + len(a.Payload) + len(a.Detail) + len(shown); size > MaxParkedApprovalBytes {
		return nil, fmt.Errorf("it holds %d bytes, more than the %d allowed", size, MaxParkedApprovalBytes)
	}
	return []any{a.Turn, a.Kind, a.Title, a.Summary, a.Detail, a.Digest, string(call), string(messages), string(a.Payload),
		a.Transport, a.Chat, string(shown), a.Created.UnixMilli(), a.Expires.UnixMilli()}, nil
}

// Update rewrites what a parked request shows and carries — its
// title, note, detail, digest, payload and where it was shown — keeping
// its key, kind, call, origin and times; ErrNoApproval when nothing is
// parked under a.Turn.
func (s *Approvals) Update(ctx context.Context, a PendingApproval) error {
	if err := s.store.writable("update approval"); err != nil {
		return err
	}
	if err := a.check(); err != nil {
		return fmt.Errorf("update approval of turn %q: %w", a.Turn, err)
	}
	row, err := a.encode()
	if err != nil {
		return fmt.Errorf("update approval of turn %q: %w", a.Turn, err)
	}
	res, err := s.store.db.ExecContext(ctx,
		`UPDATE pending_approvals SET title = ?, summary = ?, detail = ?, digest = ?, payload = ?, shown = ? WHERE turn = ?`,
		a.Title, a.Summary, a.Detail, a.Digest, string(a.Payload), row[11], a.Turn)
	if err != nil {
		return fmt.Errorf("update approval of turn %q: %w", a.Turn, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("update approval of turn %q: %w", a.Turn, err)
	} else if n == 0 {
		return fmt.Errorf("update approval of turn %q: %w", a.Turn, ErrNoApproval)
	}
	return nil
}

// Get reads where the request of turn stands in the store: the row
// parked for it, expired or not, without taking it; or, when none is
// parked, an error wrapping ErrNoApproval and, if it was settled and is
// not forgotten yet (KeepSettledApprovals, MaxSettledApprovals), what it
// came to (a zero SettledApproval otherwise). A corrupt row comes back
// with what could be read of it and an error wrapping ErrCorruptApproval.
func (s *Approvals) Get(ctx context.Context, turn string) (PendingApproval, SettledApproval, error) {
	row := s.store.db.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM pending_approvals WHERE turn = ?`, turn)
	a, err := scanApproval(row)
	if !errors.Is(err, sql.ErrNoRows) {
		if err != nil {
			return a, SettledApproval{}, approvalError("read approval", turn, err)
		}
		return a, SettledApproval{}, nil
	}
	var (
		settled SettledApproval
		at      int64
	)
	err = s.store.db.QueryRowContext(ctx, `SELECT turn, outcome, at FROM settled_approvals WHERE turn = ?`, turn).Scan(&settled.Turn, &settled.Outcome, &at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return PendingApproval{}, SettledApproval{}, fmt.Errorf("read approval of turn %q: %w", turn, ErrNoApproval)
	case err != nil:
		return PendingApproval{}, SettledApproval{}, fmt.Errorf("read the outcome of turn %q: %w", turn, err)
	}
	settled.At = time.UnixMilli(at)
	return PendingApproval{}, settled, fmt.Errorf("read approval of turn %q: %w: settled %s", turn, ErrNoApproval, settled.Outcome)
}

// Take removes the call parked for turn and returns it, and
// records it settled with outcome, in one transaction, so of two takes
// only one gets it; the other gets ErrNoApproval. A call that expired by
// now is removed too, recorded as expired, and returned with an error
// wrapping ErrApprovalExpired, so the owner can be told what lapsed; it
// must not run. A corrupt row is removed as well, recorded as gone, and
// returned as PendingApproval reads it.
func (s *Approvals) Take(ctx context.Context, turn string, now time.Time, outcome string) (PendingApproval, error) {
	if err := s.store.writable("take approval"); err != nil {
		return PendingApproval{}, err
	}
	if outcome == "" {
		return PendingApproval{}, fmt.Errorf("take approval of turn %q: no outcome given", turn)
	}
	var (
		a       PendingApproval
		readErr error
	)
	err := s.store.inTx(ctx, func(tx *keptTx) error {
		a, readErr = scanApproval(tx.QueryRowContext(ctx, `DELETE FROM pending_approvals WHERE turn = ? RETURNING `+approvalColumns, turn))
		settled := outcome
		switch {
		case errors.Is(readErr, ErrCorruptApproval):
			settled = contracts.ApprovalGone
		case readErr != nil:
			return readErr
		case a.expired(now):
			settled = contracts.ApprovalExpired
		}
		return settle(ctx, tx, now, SettledApproval{Turn: turn, Outcome: settled, At: now})
	})
	if err == nil {
		err = readErr
	}
	if err != nil {
		return a, approvalError("take approval", turn, err)
	}
	if a.expired(now) {
		return a, fmt.Errorf("take approval of turn %q: %w at %s", turn, ErrApprovalExpired, a.Expires.Format(time.RFC3339))
	}
	return a, nil
}

// NextExpiry is when the first parked request expires; ok is false when
// none is parked.
func (s *Approvals) NextExpiry(ctx context.Context) (at time.Time, ok bool, err error) {
	return s.store.earliestExpiry(ctx, "pending_approvals")
}

// Expire removes every call whose expiry has come by now,
// records each settled as expired, and returns them, oldest first, so
// the owner can be told. Corrupt rows are removed too and returned with
// what could be read of them, and the error then wraps ErrCorruptApproval
// and names each of their turns.
func (s *Approvals) Expire(ctx context.Context, now time.Time) ([]PendingApproval, error) {
	if err := s.store.writable("expire approvals"); err != nil {
		return nil, err
	}
	var (
		expired []PendingApproval
		readErr error
	)
	err := s.store.inTx(ctx, func(tx *keptTx) error {
		// Multi-row RETURNING has no kept statement: it runs rarely.
		rows, err := tx.tx.QueryContext(ctx, `DELETE FROM pending_approvals WHERE expires_at <= ? RETURNING `+approvalColumns, now.UnixMilli())
		if err != nil {
			return err
		}
		expired, readErr = scanApprovals(rows)
		if readErr != nil && !errors.Is(readErr, ErrCorruptApproval) {
			return readErr
		}
		for _, a := range expired {
			if err := settle(ctx, tx, now, SettledApproval{Turn: a.Turn, Outcome: contracts.ApprovalExpired, At: now}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("expire approvals: %w", err)
	}
	// RETURNING gives no order of its own.
	slices.SortFunc(expired, compareApprovals)
	if readErr != nil {
		return expired, fmt.Errorf("expire approvals: %w", readErr)
	}
	return expired, nil
}

// How long, and how many, settled requests are remembered once settled,
// so that a tap on an old message is answered with what it came to
// rather than "unknown": a month of a pet's requests, a few dozen bytes
// each.
const (
	KeepSettledApprovals = 30 * 24 * time.Hour
	MaxSettledApprovals  = 1000
)

// SettledApproval is what a request came to once it left the parked
// ones: approved, denied, expired, replaced or gone, and when.
type SettledApproval struct {
	Turn    string
	Outcome string
	// At is when it was settled, to the millisecond.
	At time.Time
}

// settle records a settled, in tx, and forgets the settled requests past
// KeepSettledApprovals or MaxSettledApprovals as of now.
func settle(ctx context.Context, tx *keptTx, now time.Time, a SettledApproval) error {
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO settled_approvals (turn, outcome, at) VALUES (?, ?, ?)
		 ON CONFLICT (turn) DO UPDATE SET outcome = excluded.outcome, at = excluded.at`,
		a.Turn, clip(a.Outcome, MaxKindBytes), a.At.UnixMilli()); err != nil {
		return fmt.Errorf("record %q settled: %w", a.Turn, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM settled_approvals WHERE at < ?`, now.Add(-KeepSettledApprovals).UnixMilli()); err != nil {
		return fmt.Errorf("forget old settled requests: %w", err)
	}
	if _, err := tx.ExecContext(ctx,
		`DELETE FROM settled_approvals WHERE turn IN (SELECT turn FROM settled_approvals ORDER BY at DESC, turn DESC LIMIT -1 OFFSET ?)`,
		MaxSettledApprovals); err != nil {
		return fmt.Errorf("forget settled requests past %d: %w", MaxSettledApprovals, err)
	}
	return nil
}

// Waiting returns every parked call, oldest first, expired or
// not. Corrupt rows are returned with what could be read of them, and the
// error then wraps ErrCorruptApproval and names each of their turns.
func (s *Approvals) Waiting(ctx context.Context) ([]PendingApproval, error) {
	rows, err := s.store.db.QueryContext(ctx, `SELECT `+approvalColumns+` FROM pending_approvals ORDER BY created_at, turn`)
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
// something Approvals.Park would have refused, it returns the plain columns
// and an error that wraps ErrCorruptApproval and names the turn.
func scanApproval(row interface{ Scan(...any) error }) (PendingApproval, error) {
	var (
		a                              PendingApproval
		call, messages, payload, shown string
		created, expires               int64
	)
	if err := row.Scan(&a.Turn, &a.Kind, &a.Title, &a.Summary, &a.Detail, &a.Digest, &call, &messages, &payload,
		&a.Transport, &a.Chat, &shown, &created, &expires); err != nil {
		return PendingApproval{}, err
	}
	a.Created = time.UnixMilli(created)
	a.Expires = time.UnixMilli(expires)
	if payload != "" {
		a.Payload = []byte(payload)
	}
	decoded := a
	if err := json.Unmarshal([]byte(call), &decoded.Call); err != nil {
		return a, fmt.Errorf("turn %q: %w: call: %w", a.Turn, ErrCorruptApproval, err)
	}
	if err := json.Unmarshal([]byte(messages), &decoded.Messages); err != nil {
		return a, fmt.Errorf("turn %q: %w: messages: %w", a.Turn, ErrCorruptApproval, err)
	}
	if err := json.Unmarshal([]byte(shown), &decoded.Shown); err != nil {
		return a, fmt.Errorf("turn %q: %w: where it was shown: %w", a.Turn, ErrCorruptApproval, err)
	}
	if err := decoded.check(); err != nil {
		return a, fmt.Errorf("turn %q: %w: %w", a.Turn, ErrCorruptApproval, err)
	}
	return decoded, nil
}
