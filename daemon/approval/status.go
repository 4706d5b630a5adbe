package approval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/state"
)

// State is where a request stands, as the authority knows it.
type State int

const (
	// Unknown: never parked, or settled so long ago it is forgotten
	// (state.KeepSettledApprovals, state.MaxSettledApprovals).
	Unknown State = iota
	// Open: parked, waiting for the owner until Expires.
	Open
	// Settled: it came to Outcome, at At.
	Settled
)

// Status is where one request stands: what a transport shows for it,
// and whether a tap on it may become a decision. The authority alone
// keeps it (parked requests, and settled ones a while); a transport
// keeps no state of its own for a request.
type Status struct {
	State State
	// Expires is when an open request stops being honoured.
	Expires time.Time
	// Created is when an open request was parked: a transport forgets
	// what it showed of an earlier request under the same key.
	Created time.Time
	// Outcome and At are what a settled request came to, and when: one of
	// contracts' Approval outcomes.
	Outcome string
	At      time.Time
}

// StatusStore is what statuses are read from: the state store, where
// the authority keeps them.
type StatusStore interface {
	Get(ctx context.Context, turn string) (state.PendingApproval, state.SettledApproval, error)
}

// Statuses reads where requests stand, for the transports: it only reads,
// so a transport given it can neither park, take nor settle a request.
// It is safe for concurrent use as far as its store is.
type Statuses struct {
	store StatusStore
	clock clock.Clock
}

// NewStatuses reads statuses from store, on clock: the store and clock
// the authority keeps requests in.
func NewStatuses(store StatusStore, clk clock.Clock) *Statuses {
	return &Statuses{store: store, clock: clk}
}

// Status says where the request of key stands. A parked request past its
// expiry is settled as expired already, as a decision on it would find:
// the authority's sweep that drops it may not have run yet.
func (s *Statuses) Status(ctx context.Context, key string) (Status, error) {
	p, settled, err := s.store.Get(ctx, key)
	switch {
	case err == nil, errors.Is(err, state.ErrCorruptApproval):
		// A damaged row is open until a decision drops it and says so.
		if now := s.clock.Now(); !p.Expires.After(now) {
			return Status{State: Settled, Outcome: contracts.ApprovalExpired, At: p.Expires}, nil
		}
		return Status{State: Open, Expires: p.Expires, Created: p.Created}, nil
	case !errors.Is(err, state.ErrNoApproval):
		return Status{}, fmt.Errorf("status of request %s: %w", key, err)
	case settled.Outcome == "":
		return Status{}, nil
	}
	return Status{State: Settled, Outcome: settled.Outcome, At: settled.At}, nil
}
