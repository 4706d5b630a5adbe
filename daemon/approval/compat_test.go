package approval

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"shelldon/daemon/state"
	"shelldon/daemon/statedir"

	_ "modernc.org/sqlite" // the state store's driver, to write rows as an older shelldon did
)

// TestRequestsKeptBeforeTheKindsMovedStillLoad opens a state.db whose
// rows an older shelldon wrote, when the kinds were the state store's
// (testdata/state-rows-2026-12.sql: one request of each kind, and a call
// from before digests), and carries each out as approved: every one is
// read, shown again where needed, and verified against the digest it
// was parked with.
func TestRequestsKeptBeforeTheKindsMovedStillLoad(t *testing.T) {
	ctx := context.Background()
	layout := statedir.Layout{Root: t.TempDir()}
	store, err := state.Open(layout) // today's schema
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	rows, err := os.ReadFile(filepath.Join("testdata", "state-rows-2026-12.sql"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", layout.DB())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, string(rows)); err != nil {
		t.Fatal(err)
	}
	db.Close()

	r := newRigIn(t, layout.Root)
	// The change set's kept layer, as the older core kept it.
	layer := filepath.Join(r.exec.kept, "k000000000000001")
	if err := os.MkdirAll(layer, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(layer, "conftest.py"), []byte("import os\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.auth.Renew(ctx)
	want := []string{"0000000000000001", "0000000000000002", "0000000000000009", "c000000000000001", "m000000000000001", "p000000000000001", "t000000000000001"}
	if got := r.waiting(); !slices.Equal(got, want) {
		t.Fatalf("waiting after the upgrade = %q, want %q", got, want)
	}
	for _, key := range want {
		r.slot = false
		out := r.decide(key, true, owner)
		if out.Verdict != Approved {
			t.Fatalf("Approve of %s = %+v, told %q", key, out, r.notes.told)
		}
		r.auth.CarryOut(ctx, out)
	}
	if ran := []string{"0000000000000001", "0000000000000002", "0000000000000009"}; !slices.Equal(r.exec.ran, ran) {
		t.Errorf("calls run = %q, want %q (resumed: %q)", r.exec.ran, ran, r.host.resumed)
	}
	if !slices.Equal(r.exec.applied, []string{"c000000000000001"}) {
		t.Errorf("change sets applied = %q, want the kept one (told %+v)", r.exec.applied, r.host.reports)
	}
	if handed := []string{"memory:m000000000000001:true", "promotion:p000000000000001:true", "token-cap:t000000000000001:true"}; !slices.Equal(r.host.kept, handed) {
		t.Errorf("handed to core = %q, want %q (told %q)", r.host.kept, handed, r.notes.told)
	}
}

// TestARowThatBreaksItsKindIsDamaged: the store keeps a kind it does not
// know the meaning of; the authority reads a row that does not carry what
// its kind must as damaged, drops it when decided and says so, and never
// carries it out.
func TestARowThatBreaksItsKindIsDamaged(t *testing.T) {
	call := callRequest("t0", "a.txt").Call
	for name, row := range map[string]state.PendingApproval{
		"a promotion carrying a call": {Kind: string(Promotion), Call: call.Call, Messages: call.Messages, Summary: "s", Payload: []byte(`{}`)},
		"a call without one":          {Kind: string(Call), Payload: []byte(`{}`)},
		"a kind nobody knows":         {Kind: "wish", Payload: []byte(`{}`)},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			row.Turn, row.Digest, row.Transport, row.Chat, row.Shown = "k1", "d", owner.Transport, owner.Chat, []Audience{owner}
			row.Created, row.Expires = r.clk.Now(), r.clk.Now().Add(expiry)
			if err := r.store.Approvals().Park(context.Background(), row); err != nil {
				t.Fatal(err)
			}
			out := r.decide("k1", true, owner)
			if out.Verdict != Refused || !has(r.notes.told, "damaged") || r.auth.CarryOut(context.Background(), out) {
				t.Errorf("Decide = %+v, told %q: want it dropped as damaged", out, r.notes.told)
			}
		})
	}
}
