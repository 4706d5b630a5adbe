package state

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/statedir"
)

// parkedAt is a valid parked call of turn, created at created and
// honoured for an hour.
func parkedAt(turn string, created time.Time) PendingApproval {
	call := contracts.ToolCall{ID: "call-" + turn, Name: "run_shell", Args: `{"command":"rm -rf build"}`}
	return PendingApproval{
		Turn:    turn,
		Kind:    "call",
		Call:    call,
		Summary: "deletes files in the workspace",
		Messages: []contracts.Message{
			{Role: contracts.ChatSystem, Content: "you are shelldon"},
			{Role: contracts.ChatUser, Content: "clean the build"},
			{Role: contracts.ChatAssistant, ToolCalls: []contracts.ToolCall{call}},
		},
		Transport: "telegram",
		Chat:      "42",
		Created:   created,
		Expires:   created.Add(time.Hour),
	}
}

var epoch = time.UnixMilli(1_700_000_000_000)

func sameApproval(got, want PendingApproval) bool {
	return got.Created.Equal(want.Created) && got.Expires.Equal(want.Expires) &&
		reflect.DeepEqual(got.Call, want.Call) && reflect.DeepEqual(got.Messages, want.Messages) &&
		got.Turn == want.Turn && got.Summary == want.Summary && got.Transport == want.Transport && got.Chat == want.Chat
}

func turnsOf(list []PendingApproval) []string {
	var turns []string
	for _, a := range list {
		turns = append(turns, a.Turn)
	}
	return turns
}

func park(t *testing.T, s *Store, a PendingApproval) {
	t.Helper()
	if err := s.Approvals().Park(context.Background(), a); err != nil {
		t.Fatalf("Approvals.Park(%q) = %v", a.Turn, err)
	}
}

func TestParkAndPeekApproval(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	want := parkedAt("t1", epoch)
	park(t, s, want)
	// Peeking twice finds it twice: a peek consumes nothing.
	for i := range 2 {
		got, _, err := s.Approvals().Get(ctx, "t1")
		if err != nil || !sameApproval(got, want) {
			t.Errorf("Approval(t1) #%d = %+v, %v, want %+v", i, got, err, want)
		}
	}
	if _, _, err := s.Approvals().Get(ctx, "nope"); !errors.Is(err, ErrNoApproval) {
		t.Errorf("Approval(nope) = %v, want ErrNoApproval", err)
	}
}

func TestParkApprovalRefuses(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	park(t, s, parkedAt("taken", epoch))
	with := func(change func(*PendingApproval)) PendingApproval {
		a := parkedAt("bad", epoch)
		change(&a)
		return a
	}
	tests := []struct {
		name     string
		approval PendingApproval
		wantIs   error
		wantText string
	}{
		{"no turn id", with(func(a *PendingApproval) { a.Turn = "" }), nil, "no turn id"},
		{"call names no tool", with(func(a *PendingApproval) { a.Call.Name = "" }), contracts.ErrInvalidOp, `"bad"`},
		{"call has no id", with(func(a *PendingApproval) { a.Call.ID = "" }), contracts.ErrInvalidOp, `"bad"`},
		{"arguments not an object", with(func(a *PendingApproval) { a.Call.Args = `["x"]` }), contracts.ErrInvalidOp, `"bad"`},
		{"summary too long", with(func(a *PendingApproval) { a.Summary = strings.Repeat("x", contracts.MaxSummaryBytes+1) }), contracts.ErrInvalidOp, "summary"},
		{"no messages", with(func(a *PendingApproval) { a.Messages = nil }), contracts.ErrInvalidOp, "messages"},
		{"too many messages", with(func(a *PendingApproval) {
			a.Messages = make([]contracts.Message, contracts.MaxParkedMessages+1)
		}), contracts.ErrInvalidOp, "messages"},
		{"no creation time", with(func(a *PendingApproval) { a.Created = time.Time{} }), nil, "expiry"},
		{"expiry before creation", with(func(a *PendingApproval) { a.Expires = a.Created.Add(-time.Second) }), nil, "expiry"},
		{"expiry at creation", with(func(a *PendingApproval) { a.Expires = a.Created }), nil, "expiry"},
		{"more JSON than allowed", with(func(a *PendingApproval) {
			a.Messages[1].Content = strings.Repeat("x", MaxParkedApprovalBytes)
		}), nil, "more than the 4194304 allowed"},
		{"a payload that is not JSON", with(func(a *PendingApproval) {
			a.Kind, a.Call, a.Messages, a.Payload = "changeset", contracts.ToolCall{}, nil, []byte(`{"dir":`)
		}), nil, "not JSON"},
		{"no kind", with(func(a *PendingApproval) { a.Kind = "" }), nil, "kind"},
		{"a kind too long", with(func(a *PendingApproval) { a.Kind = strings.Repeat("k", MaxKindBytes+1) }), nil, "kind"},
		{"second park of a turn", parkedAt("taken", epoch.Add(time.Minute)), ErrApprovalExists, `"taken"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Approvals().Park(ctx, tt.approval)
			if err == nil {
				t.Fatalf("Approvals.Park(%s) = nil, want an error", tt.name)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Approvals.Park(%s) = %v, want it to wrap %v", tt.name, err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Approvals.Park(%s) = %q, want it to mention %s", tt.name, err, tt.wantText)
			}
		})
	}
	// Nothing refused was parked, and the first park of "taken" stands.
	list, err := s.Approvals().Waiting(ctx)
	if err != nil || len(list) != 1 || !sameApproval(list[0], parkedAt("taken", epoch)) {
		t.Errorf("Approvals.Waiting after the refusals = %+v, %v, want only the first park of taken", list, err)
	}
}

func TestTakeApproval(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name        string
		parked      []string // turns parked at epoch, expiring at epoch+1h
		takes       []string
		now         time.Time
		wantErrs    []error // one per take; nil for success
		wantTheRows bool    // every take returns the parked row, even when it fails
	}{
		{"fresh", []string{"t1"}, []string{"t1"}, epoch.Add(time.Minute), []error{nil}, true},
		{"unknown", []string{"t1"}, []string{"t2"}, epoch, []error{ErrNoApproval}, false},
		{"taken twice", []string{"t1"}, []string{"t1", "t1"}, epoch, []error{nil, ErrNoApproval}, false},
		{"a millisecond before expiry", []string{"t1"}, []string{"t1"}, epoch.Add(time.Hour - time.Millisecond), []error{nil}, true},
		{"at expiry", []string{"t1"}, []string{"t1"}, epoch.Add(time.Hour), []error{ErrApprovalExpired}, true},
		{"long expired, then again", []string{"t1"}, []string{"t1", "t1"}, epoch.Add(48 * time.Hour), []error{ErrApprovalExpired, ErrNoApproval}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			for _, turn := range tt.parked {
				park(t, s, parkedAt(turn, epoch))
			}
			for i, turn := range tt.takes {
				got, err := s.Approvals().Take(ctx, turn, tt.now, "approved")
				want := tt.wantErrs[i]
				if (want == nil) != (err == nil) || (want != nil && !errors.Is(err, want)) {
					t.Errorf("Approvals.Take(%q) #%d = %v, want %v", turn, i, err, want)
				}
				if want != nil && !strings.Contains(err.Error(), turn) {
					t.Errorf("Approvals.Take(%q) = %q, want it to name the turn", turn, err)
				}
				if tt.wantTheRows && !sameApproval(got, parkedAt(turn, epoch)) {
					t.Errorf("Approvals.Take(%q) #%d = %+v, want the parked row", turn, i, got)
				}
			}
			for _, turn := range tt.takes {
				if _, _, err := s.Approvals().Get(ctx, turn); !errors.Is(err, ErrNoApproval) {
					t.Errorf("Approval(%q) after a take = %v, want ErrNoApproval", turn, err)
				}
			}
		})
	}
}

func TestConcurrentTakesHaveOneWinner(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	park(t, s, parkedAt("t1", epoch))
	const takers = 16
	var (
		start   = make(chan struct{})
		wg      sync.WaitGroup
		results = make(chan error, takers)
	)
	for range takers {
		wg.Go(func() {
			<-start
			_, err := s.Approvals().Take(ctx, "t1", epoch, "approved")
			results <- err
		})
	}
	close(start)
	wg.Wait()
	close(results)
	winners := 0
	for err := range results {
		switch {
		case err == nil:
			winners++
		case !errors.Is(err, ErrNoApproval):
			t.Errorf("a losing Approvals.Take = %v, want ErrNoApproval", err)
		}
	}
	if winners != 1 {
		t.Errorf("%d concurrent takes succeeded, want exactly 1", winners)
	}
}

func TestExpireApprovals(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	// Created in the order c, a, b; each lives an hour from its creation.
	for turn, created := range map[string]time.Time{"a": epoch.Add(time.Minute), "b": epoch.Add(2 * time.Minute), "c": epoch, "late": epoch.Add(time.Hour)} {
		park(t, s, parkedAt(turn, created))
	}
	tests := []struct {
		name        string
		now         time.Time
		wantExpired []string
		wantLeft    []string
	}{
		{"before any expiry", epoch.Add(59 * time.Minute), nil, []string{"c", "a", "b", "late"}},
		{"at c's expiry", epoch.Add(time.Hour), []string{"c"}, []string{"a", "b", "late"}},
		{"past a's and b's", epoch.Add(90 * time.Minute), []string{"a", "b"}, []string{"late"}},
		{"the same again", epoch.Add(90 * time.Minute), nil, []string{"late"}},
		{"long after", epoch.Add(24 * time.Hour), []string{"late"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expired, err := s.Approvals().Expire(ctx, tt.now)
			if err != nil || !slices.Equal(turnsOf(expired), tt.wantExpired) {
				t.Errorf("Approvals.Expire(%v) = %v, %v, want %v", tt.now, turnsOf(expired), err, tt.wantExpired)
			}
			for _, a := range expired {
				if want := parkedAt(a.Turn, a.Created); !sameApproval(a, want) {
					t.Errorf("expired %+v, want the whole parked row %+v", a, want)
				}
			}
			left, err := s.Approvals().Waiting(ctx)
			if err != nil || !slices.Equal(turnsOf(left), tt.wantLeft) {
				t.Errorf("Approvals.Waiting after Approvals.Expire(%v) = %v, %v, want %v", tt.now, turnsOf(left), err, tt.wantLeft)
			}
		})
	}
}

func TestPendingApprovalsOldestFirst(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if list, err := s.Approvals().Waiting(ctx); err != nil || len(list) != 0 {
		t.Errorf("Approvals.Waiting of a new store = %v, %v, want none", list, err)
	}
	// Parked out of order; y and x share a creation time and sort by id.
	for _, a := range []PendingApproval{parkedAt("z", epoch.Add(time.Second)), parkedAt("y", epoch), parkedAt("x", epoch)} {
		park(t, s, a)
	}
	list, err := s.Approvals().Waiting(ctx)
	if want := []string{"x", "y", "z"}; err != nil || !slices.Equal(turnsOf(list), want) {
		t.Errorf("Approvals.Waiting = %v, %v, want %v", turnsOf(list), err, want)
	}
	if len(list) == 3 && !sameApproval(list[2], parkedAt("z", epoch.Add(time.Second))) {
		t.Errorf("Approvals.Waiting z = %+v, want it whole", list[2])
	}
}

func TestApprovalsSurviveReopen(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	ctx := context.Background()
	first := openStore(t, l)
	park(t, first, parkedAt("t1", epoch))
	park(t, first, parkedAt("t2", epoch.Add(time.Second)))
	first.Close() // as a core restart

	again := openStore(t, l)
	list, err := again.Approvals().Waiting(ctx)
	if want := []string{"t1", "t2"}; err != nil || !slices.Equal(turnsOf(list), want) {
		t.Fatalf("Approvals.Waiting after reopening = %v, %v, want %v", turnsOf(list), err, want)
	}
	got, err := again.Approvals().Take(ctx, "t1", epoch.Add(time.Minute), "approved")
	if err != nil || !sameApproval(got, parkedAt("t1", epoch)) {
		t.Errorf("Approvals.Take(t1) after reopening = %+v, %v, want the parked row", got, err)
	}
}

func TestReadOnlyApprovals(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	ctx := context.Background()
	writer := openStore(t, l)
	park(t, writer, parkedAt("t1", epoch))
	reader, err := OpenReadOnly(l)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()

	if got, _, err := reader.Approvals().Get(ctx, "t1"); err != nil || !sameApproval(got, parkedAt("t1", epoch)) {
		t.Errorf("read-only Approval(t1) = %+v, %v, want the parked row", got, err)
	}
	if list, err := reader.Approvals().Waiting(ctx); err != nil || len(list) != 1 {
		t.Errorf("read-only Approvals.Waiting = %v, %v, want t1", turnsOf(list), err)
	}
	_, takeErr := reader.Approvals().Take(ctx, "t1", epoch, "approved")
	_, expireErr := reader.Approvals().Expire(ctx, epoch.Add(24*time.Hour))
	writes := map[string]error{
		"Approvals.Park":   reader.Approvals().Park(ctx, parkedAt("t2", epoch)),
		"Approvals.Take":   takeErr,
		"Approvals.Expire": expireErr,
	}
	for name, err := range writes {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("read-only %s = %v, want ErrReadOnly", name, err)
		}
	}
	if list, err := writer.Approvals().Waiting(ctx); err != nil || !slices.Equal(turnsOf(list), []string{"t1"}) {
		t.Errorf("Approvals.Waiting after the refused writes = %v, %v, want t1 alone", turnsOf(list), err)
	}
}

// TestCorruptApprovalRow writes rows behind the store's back that it
// would never have parked: every reader reports the turn, and the
// consuming ones clear the row away.
func TestCorruptApprovalRow(t *testing.T) {
	good := parkedAt("good", epoch)
	tests := []struct {
		name, call, messages string
	}{
		{"call not JSON", `{"id":`, `[{"role":"user","content":"hi"}]`},
		{"messages not JSON", `{"id":"c1","name":"run_shell","args":"{}"}`, `not json`},
		{"messages of the wrong shape", `{"id":"c1","name":"run_shell","args":"{}"}`, `{"role":"user"}`},
		{"no messages", `{"id":"c1","name":"run_shell","args":"{}"}`, `[]`},
		{"call names no tool", `{"id":"c1","name":"","args":"{}"}`, `[{"role":"user","content":"hi"}]`},
		{"call arguments not an object", `{"id":"c1","name":"run_shell","args":"[1"}`, `[{"role":"user","content":"hi"}]`},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := statedir.Layout{Root: t.TempDir()}
			s := openStore(t, l)
			park(t, s, good)
			insert := func(turn string) {
				t.Helper()
				if _, err := rawDB(t, l).Exec(`INSERT INTO pending_approvals (turn, call, summary, messages, chat, created_at, expires_at) VALUES (?, ?, 'risky', ?, '7', ?, ?)`,
					turn, tt.call, tt.messages, epoch.Add(time.Second).UnixMilli(), epoch.Add(time.Hour).UnixMilli()); err != nil {
					t.Fatal(err)
				}
			}
			checkErr := func(what string, err error, turn string) {
				t.Helper()
				if !errors.Is(err, ErrCorruptApproval) || !strings.Contains(err.Error(), `"`+turn+`"`) {
					t.Errorf("%s with a corrupt row = %v, want ErrCorruptApproval naming %q", what, err, turn)
				}
			}
			insert("broken")

			a, _, err := s.Approvals().Get(ctx, "broken")
			checkErr("PendingApproval", err, "broken")
			if a.Turn != "broken" || a.Chat != "7" || !a.Expires.Equal(epoch.Add(time.Hour)) {
				t.Errorf("PendingApproval of a corrupt row = %+v, want its plain columns", a)
			}
			list, err := s.Approvals().Waiting(ctx)
			checkErr("Approvals.Waiting", err, "broken")
			if want := []string{"good", "broken"}; !slices.Equal(turnsOf(list), want) || !sameApproval(list[0], good) {
				t.Errorf("Approvals.Waiting with a corrupt row = %v, want %v with good whole", turnsOf(list), want)
			}

			_, err = s.Approvals().Take(ctx, "broken", epoch, "approved")
			checkErr("Approvals.Take", err, "broken")
			if _, _, err := s.Approvals().Get(ctx, "broken"); !errors.Is(err, ErrNoApproval) {
				t.Errorf("PendingApproval after taking a corrupt row = %v, want ErrNoApproval", err)
			}

			insert("broken-again")
			expired, err := s.Approvals().Expire(ctx, epoch.Add(2*time.Hour))
			checkErr("Approvals.Expire", err, "broken-again")
			if want := []string{"good", "broken-again"}; !slices.Equal(turnsOf(expired), want) {
				t.Errorf("Approvals.Expire with a corrupt row = %v, want %v", turnsOf(expired), want)
			}
			if list, err := s.Approvals().Waiting(ctx); err != nil || len(list) != 0 {
				t.Errorf("Approvals.Waiting after expiring everything = %v, %v, want none", turnsOf(list), err)
			}
		})
	}
}

// TestRequestsOfEveryKindRoundTrip: a promotion and a change set park with
// their payload, title, detail, digest and audiences, read back as parked,
// and Approvals.Update rewrites what they show but nothing else.
func TestRequestsOfEveryKindRoundTrip(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	promo := PendingApproval{
		Turn: "p1", Kind: "promotion", Title: "new tool greet", Summary: "Greets.", Detail: "greet.py:\n…",
		Digest: "abc", Payload: []byte(`{"stem":"greet"}`), Transport: "telegram", Chat: "42",
		Shown: []Audience{{Transport: "telegram", Chat: "42"}}, Created: epoch, Expires: epoch.Add(time.Hour),
	}
	park(t, s, promo)
	got, _, err := s.Approvals().Get(ctx, "p1")
	if err != nil || got.Kind != "promotion" || got.Title != promo.Title || got.Detail != promo.Detail ||
		got.Digest != "abc" || string(got.Payload) != `{"stem":"greet"}` || !slices.Equal(got.Shown, promo.Shown) {
		t.Fatalf("Approval(p1) = %+v, %v; want it as parked", got, err)
	}
	got.Shown = append(got.Shown, Audience{Transport: "cli", Chat: "cli"})
	got.Detail, got.Digest, got.Kind, got.Transport = "shown again", "def", "changeset", "elsewhere"
	if err := s.Approvals().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	again, _, err := s.Approvals().Get(ctx, "p1")
	if err != nil || again.Detail != "shown again" || again.Digest != "def" || len(again.Shown) != 2 ||
		again.Kind != "promotion" || again.Transport != "telegram" {
		t.Errorf("after Approvals.Update = %+v, %v; want the new detail, digest and audiences, the kind and origin kept", again, err)
	}
	if err := s.Approvals().Update(ctx, PendingApproval{Turn: "none", Kind: "promotion", Payload: []byte(`{}`)}); !errors.Is(err, ErrNoApproval) {
		t.Errorf("Approvals.Update(nothing parked) = %v, want ErrNoApproval", err)
	}
}

// TestARowFromBeforeDigestsIsMigrated: a call and a promotion parked by
// schema 7 read back after the migration as a call without a digest (for
// core to renew) and as a corrupt promotion (its code lived in the
// workspace), neither lost silently.
func TestARowFromBeforeDigestsIsMigrated(t *testing.T) {
	dir := t.TempDir()
	layout := statedir.Layout{Root: dir}
	saved := migrations
	migrations = migrations[:7]
	old, err := Open(layout)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	call := parkedAt("0123456789abcdef", epoch)
	callJSON, _ := json.Marshal(call.Call)
	msgJSON, _ := json.Marshal(call.Messages)
	for _, turn := range []string{"0123456789abcdef", "promote-greet"} {
		if _, err := old.db.ExecContext(ctx, `INSERT INTO pending_approvals (turn, call, summary, messages, transport, chat, created_at, expires_at)
			VALUES (?, ?, 'note', ?, 'telegram', '42', ?, ?)`, turn, string(callJSON), string(msgJSON), epoch.UnixMilli(), epoch.Add(time.Hour).UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	migrations = saved
	s, err := Open(layout)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The store reads both back as they are; that a promotion without a
	// payload is damaged is the approval authority's to say.
	list, err := s.Approvals().Waiting(ctx)
	if err != nil || len(list) != 2 || list[1].Kind != "promotion" {
		t.Fatalf("Approvals.Waiting after the migration = %+v, %v; want both rows, the second a promotion", list, err)
	}
	if c := list[0]; c.Turn != "0123456789abcdef" || c.Kind != "call" || c.Digest != "" || c.Call != call.Call {
		t.Errorf("the migrated call = %+v, want a call without a digest", c)
	}
}
