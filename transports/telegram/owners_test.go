package telegram

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/daemon/pairing"
)

// kv is a key-value store in memory.
type kv map[string][]byte

func (m kv) Get(_ context.Context, key string) ([]byte, bool, error) {
	v, ok := m[key]
	return v, ok, nil
}

func (m kv) Put(_ context.Context, key string, value []byte) error {
	m[key] = value
	return nil
}

// TestStrangersAreAnsweredWithinBounds: while the pet has no owner, a
// stranger reads "not paired" once a minute at most, and all strangers
// together at most notPairedPerMinute times a minute; once it has one,
// strangers read nothing.
func TestStrangersAreAnsweredWithinBounds(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	file := filepath.Join(t.TempDir(), "pairing.json")
	p := pairer{file: file, store: kv{}, owners: &owners{}, clock: clk, log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	answered := func(id int64) bool {
		_, reply := p.take(ctx, &user{ID: id}, "/start")
		return reply == notPairedReply
	}
	if !answered(1) || answered(1) {
		t.Error("one stranger was not answered once, or was answered twice within a minute")
	}
	n := 1
	for id := int64(2); id < 100; id++ {
		if answered(id) {
			n++
		}
	}
	if n != notPairedPerMinute {
		t.Errorf("%d strangers were answered within a minute, want %d", n, notPairedPerMinute)
	}
	clk.Advance(time.Minute)
	if !answered(1) {
		t.Error("a stranger was not answered again a minute later")
	}

	code, err := pairing.Mint(file, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if paired, reply := p.take(ctx, &user{ID: 42}, code); !paired || reply != pairedReply {
		t.Fatalf("the code's sender: paired %v, read %q", paired, reply)
	}
	clk.Advance(time.Hour)
	if answered(1000) || !p.owners.allowed(42) {
		t.Error("with an owner, a stranger was answered, or the owner is not allowed")
	}

	// The next transport takes the owner up from the store.
	next := pairer{file: file, store: p.store, owners: &owners{}, clock: clk, log: slog.New(slog.DiscardHandler)}
	if err := next.load(ctx); err != nil || !next.owners.allowed(42) {
		t.Errorf("load = %v, allowed(42) = %v; want the paired owner back", err, next.owners.allowed(42))
	}
	bad := pairer{store: kv{pairedOwnerKey: []byte("-5")}, owners: &owners{}}
	if err := bad.load(ctx); err == nil || bad.owners.allowed(-5) {
		t.Errorf("load of a damaged owner = %v", err)
	}
}
