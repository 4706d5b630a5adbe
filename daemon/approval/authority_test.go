package approval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
)

// notes records what the authority told the transports.
type notes struct {
	asked   []string // key@transport/chat digest
	settled []string // key:outcome
	told    []string // transport/chat: text
}

func (n *notes) Ask(to Audience, req contracts.ApprovalRequest) {
	n.asked = append(n.asked, fmt.Sprintf("%s@%s/%s %s", req.Turn, to.Transport, to.Chat, req.Digest))
}
func (n *notes) Settled(key, outcome string) { n.settled = append(n.settled, key+":"+outcome) }
func (n *notes) Tell(to Audience, text string) {
	n.told = append(n.told, fmt.Sprintf("%s/%s: %s", to.Transport, to.Chat, text))
}

// rig is an authority over a real state store, on a fake clock.
type rig struct {
	t     *testing.T
	store *state.Store
	clk   *clock.Fake
	notes *notes
	auth  *Authority
	exec  *executor
	host  *host
	slot  bool // the turn slot is taken
}

const expiry = time.Hour

var (
	owner    = Audience{Transport: "telegram", Chat: "42"}
	terminal = Audience{Transport: "cli", Chat: "cli"}
	stranger = Audience{Transport: "telegram", Chat: "666"}
)

func newRig(t *testing.T) *rig { return newRigIn(t, t.TempDir()) }

// newRigIn is a rig over the state directory dir.
func newRigIn(t *testing.T, dir string) *rig {
	store, err := state.Open(statedir.Layout{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	r := &rig{t: t, store: store, clk: clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))}
	r.exec = newExecutor(t, r.clk)
	r.restart()
	return r
}

// restart makes a new authority over the same store, as a core restart
// does.
func (r *rig) restart() {
	r.notes, r.host = &notes{}, &host{}
	r.auth = New(Config{Store: r.store, Notify: r.notes, Clock: r.clk, Expiry: expiry, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Executor: r.exec, Host: r.host})
}

func (r *rig) claim() bool {
	if r.slot {
		return false
	}
	r.slot = true
	return true
}

func callRequest(turn, path string) Request {
	call := contracts.ToolCall{ID: "c-" + turn, Name: "write_file", Args: `{"path":"` + path + `","content":"x"}`}
	return Request{Key: turn, Kind: Call, Origin: owner,
		Call: &CallPayload{Call: call, Messages: []contracts.Message{{Role: contracts.ChatAssistant, ToolCalls: []contracts.ToolCall{call}}}}}
}

// callDigest is the digest the authority gives callRequest(_, path).
func (r *rig) callDigest(path string) string {
	r.t.Helper()
	req := callRequest("", path)
	checked, err := r.exec.Check(req.Call.Call)
	if err != nil {
		r.t.Fatal(err)
	}
	return CallDigest("write_file", checked, "")
}

func promotionRequest(stem, code string) Request {
	p := PromotionPayload{Stem: stem, Description: "d", Module: code, Test: "def test_x(): pass\n", Gate: "1 passed"}
	return Request{Key: NewKey(), Kind: Promotion, Origin: owner, Promotion: &p}
}

// park parks req as Park does, and returns it as kept.
func (r *rig) park(req Request) Request {
	r.t.Helper()
	kept, err := r.auth.Keep(context.Background(), req)
	if err != nil {
		r.t.Fatalf("Keep(%s) = %v", req.Key, err)
	}
	r.auth.Ask(kept)
	return kept
}

func (r *rig) decide(key string, approve bool, from Audience) Outcome {
	return r.auth.Decide(context.Background(), contracts.Decision{Turn: key, Approve: approve, Chat: from.Chat}, from, r.claim)
}

func (r *rig) waiting() []string {
	r.t.Helper()
	reqs, err := r.auth.Waiting(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	var keys []string
	for _, q := range reqs {
		keys = append(keys, q.Key)
	}
	return keys
}

func has(list []string, part string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, part) })
}

// TestTransitions walks every transition of a parked request, each from a
// fresh store and clock.
func TestTransitions(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, r *rig)
	}{
		{"park asks where it came from", func(t *testing.T, r *rig) {
			r.park(callRequest("t1", "a.txt"))
			if !slices.Equal(r.notes.asked, []string{"t1@telegram/42 " + r.callDigest("a.txt")}) || !slices.Equal(r.waiting(), []string{"t1"}) {
				t.Errorf("after Park: asked %q, waiting %q", r.notes.asked, r.waiting())
			}
		}},
		{"approve takes it once, with the slot", func(t *testing.T, r *rig) {
			req := r.park(callRequest("t1", "a.txt"))
			out := r.decide("t1", true, owner)
			if out.Verdict != Approved || !out.Slot || out.Request.Call.Call != req.Call.Call || out.Request.Digest != req.Digest {
				t.Fatalf("Decide(approve) = %+v, want the request approved with the slot", out)
			}
			if !has(r.notes.settled, "t1:approved") || len(r.waiting()) != 0 {
				t.Errorf("settled %q, waiting %q", r.notes.settled, r.waiting())
			}
			r.slot = false
			// The card keeps its outcome: the second tap does not make it "gone".
			if again := r.decide("t1", true, owner); again.Verdict != Refused || !has(r.notes.told, "settled already (approved)") || has(r.notes.settled, "t1:gone") {
				t.Errorf("a second tap = %+v, told %q, settled %q", again, r.notes.told, r.notes.settled)
			}
		}},
		{"deny", func(t *testing.T, r *rig) {
			r.park(callRequest("t1", "a.txt"))
			if out := r.decide("t1", false, owner); out.Verdict != Denied || !has(r.notes.settled, "t1:denied") {
				t.Errorf("Decide(deny) = %+v, settled %q", out, r.notes.settled)
			}
		}},
		{"a decision from where it was not shown is refused and changes nothing", func(t *testing.T, r *rig) {
			r.park(callRequest("t1", "a.txt"))
			for _, from := range []Audience{stranger, terminal, {Transport: "telegram"}} {
				if out := r.decide("t1", true, from); out.Verdict != Refused || out.Slot {
					t.Errorf("Decide from %+v = %+v, want refused without the slot", from, out)
				}
			}
			if r.slot || len(r.notes.settled) != 0 || !slices.Equal(r.waiting(), []string{"t1"}) {
				t.Errorf("after foreign decisions: slot %v, settled %q, waiting %q", r.slot, r.notes.settled, r.waiting())
			}
			if !has(r.notes.told, "telegram/666: That request was not shown here") {
				t.Errorf("told %q", r.notes.told)
			}
			if out := r.decide("t1", true, owner); out.Verdict != Approved {
				t.Errorf("the owner's own decision after them = %+v", out)
			}
		}},
		{"shown again elsewhere, decided there", func(t *testing.T, r *rig) {
			r.park(callRequest("t1", "a.txt"))
			if page, err := r.auth.ShowAgain(context.Background(), terminal, 1); page != (Page{First: 1, Last: 1, Waiting: 1}) || err != nil {
				t.Fatalf("ShowAgain = %+v, %v", page, err)
			}
			if !has(r.notes.asked, "t1@cli/cli") {
				t.Errorf("asked %q", r.notes.asked)
			}
			if out := r.decide("t1", true, terminal); out.Verdict != Approved {
				t.Errorf("a decision where it was shown again = %+v", out)
			}
		}},
		{"a decision bound to another version is refused and the request shown again", func(t *testing.T, r *rig) {
			r.park(callRequest("t1", "a.txt"))
			if !has(r.notes.asked, "t1@telegram/42 "+r.callDigest("a.txt")) {
				t.Fatalf("asked %q, want the request shown with its digest", r.notes.asked)
			}
			stale := contracts.Decision{Turn: "t1", Approve: true, Chat: owner.Chat, Digest: r.callDigest("b.txt")}
			if out := r.auth.Decide(context.Background(), stale, owner, r.claim); out.Verdict != Refused || out.Slot {
				t.Fatalf("Decide(another version) = %+v, want refused without the slot", out)
			}
			if r.slot || len(r.notes.settled) != 0 || !slices.Equal(r.waiting(), []string{"t1"}) {
				t.Errorf("after a decision on another version: slot %v, settled %q, waiting %q", r.slot, r.notes.settled, r.waiting())
			}
			if !has(r.notes.told, "telegram/42: That request is not the one you answered") || len(r.notes.asked) != 2 {
				t.Errorf("told %q, asked %q; want the owner told and the request shown again", r.notes.told, r.notes.asked)
			}
			bound := contracts.Decision{Turn: "t1", Approve: true, Chat: owner.Chat, Digest: r.callDigest("a.txt")}
			if out := r.auth.Decide(context.Background(), bound, owner, r.claim); out.Verdict != Approved {
				t.Errorf("Decide(the version shown) = %+v, want it approved", out)
			}
		}},
		{"expire tells the owner and settles; a late tap does nothing", func(t *testing.T, r *rig) {
			r.park(callRequest("t1", "a.txt"))
			r.clk.Advance(expiry - time.Millisecond)
			if got := r.auth.Expire(context.Background()); len(got) != 0 {
				t.Fatalf("expired early: %+v", got)
			}
			r.clk.Advance(time.Millisecond)
			if got := r.auth.Expire(context.Background()); len(got) != 1 || got[0].Key != "t1" {
				t.Fatalf("Expire = %+v, want t1", got)
			}
			if !has(r.notes.settled, "t1:expired") || !has(r.notes.told, "telegram/42: Nobody answered my request (write_file") {
				t.Errorf("settled %q, told %q", r.notes.settled, r.notes.told)
			}
			if out := r.decide("t1", true, owner); out.Verdict != Refused {
				t.Errorf("a tap after expiry = %+v", out)
			}
		}},
		{"many shown again a page at a time", func(t *testing.T, r *rig) {
			for i := range 12 {
				r.park(callRequest(fmt.Sprintf("t%02d", i), fmt.Sprintf("f%02d.txt", i)))
			}
			r.notes.asked = nil
			for _, tc := range []struct {
				first int
				want  Page
				asked []string
			}{
				{1, Page{1, 5, 12}, []string{"t00@cli/cli", "t04@cli/cli"}},
				{11, Page{11, 12, 12}, []string{"t10@cli/cli", "t11@cli/cli"}},
				{13, Page{13, 0, 12}, nil},
			} {
				r.notes.asked = nil
				page, err := r.auth.ShowAgain(context.Background(), terminal, tc.first)
				if page != tc.want || err != nil {
					t.Errorf("ShowAgain from %d = %+v, %v; want %+v", tc.first, page, err, tc.want)
				}
				for _, a := range tc.asked {
					if !has(r.notes.asked, a) {
						t.Errorf("ShowAgain from %d asked %q, want %s among them", tc.first, r.notes.asked, a)
					}
				}
				if n := len(r.notes.asked); tc.want.Last > 0 && n != tc.want.Last-tc.want.First+1 || tc.want.Last == 0 && n != 0 {
					t.Errorf("ShowAgain from %d asked %d requests, want the page's", tc.first, n)
				}
			}
		}},
		{"many expiring in one check are told in one note", func(t *testing.T, r *rig) {
			for i := range 8 {
				r.park(callRequest(fmt.Sprintf("t%02d", i), fmt.Sprintf("f%02d.txt", i)))
			}
			r.notes.told = nil
			r.clk.Advance(expiry)
			if got := r.auth.Expire(context.Background()); len(got) != 8 || len(r.notes.settled) != 8 {
				t.Fatalf("Expire = %d requests, settled %q; want all 8", len(got), r.notes.settled)
			}
			if len(r.notes.told) != 1 || !has(r.notes.told, "telegram/42: Nobody answered 8 of my requests") || !has(r.notes.told, "and 3 more") {
				t.Errorf("told %q, want one note counting the 8", r.notes.told)
			}
		}},
		{"a tap on an expired request not yet swept", func(t *testing.T, r *rig) {
			r.park(callRequest("t1", "a.txt"))
			r.clk.Advance(expiry)
			out := r.decide("t1", true, owner)
			if out.Verdict != Refused || !out.Slot || !has(r.notes.told, "expired") || !has(r.notes.settled, "t1:expired") {
				t.Errorf("Decide(expired) = %+v, told %q, settled %q; want refused, the claimed slot to give back", out, r.notes.told, r.notes.settled)
			}
		}},
		{"held during a turn, carried out after it", func(t *testing.T, r *rig) {
			r.park(callRequest("t1", "a.txt"))
			r.slot = true // a turn runs
			if out := r.decide("t1", true, owner); out.Verdict != Held || out.Slot || !has(r.notes.told, "as soon as I finish") {
				t.Fatalf("Decide during a turn = %+v, told %q", out, r.notes.told)
			}
			if r.auth.HeldCount() != 1 || !slices.Equal(r.waiting(), []string{"t1"}) {
				t.Errorf("held %d, waiting %q: a held decision keeps the request parked", r.auth.HeldCount(), r.waiting())
			}
			out, ok := r.auth.Held(context.Background())
			if !ok || out.Verdict != Approved || !out.Slot || out.Request.Key != "t1" {
				t.Fatalf("Held() = %+v, %v", out, ok)
			}
			if _, ok := r.auth.Held(context.Background()); ok {
				t.Error("Held() gave a decision twice")
			}
		}},
		{"held, but decided elsewhere meanwhile", func(t *testing.T, r *rig) {
			r.park(callRequest("t1", "a.txt"))
			r.auth.ShowAgain(context.Background(), terminal, 1)
			r.slot = true
			r.decide("t1", true, owner)
			r.slot = false
			r.decide("t1", false, terminal) // the terminal's answer came when the slot was free
			r.slot = true
			if out, ok := r.auth.Held(context.Background()); ok {
				t.Errorf("Held() = %+v, want nothing: the request was decided", out)
			}
		}},
		{"a promotion needs no slot", func(t *testing.T, r *rig) {
			req := r.park(promotionRequest("greet", "v1"))
			r.slot = true
			out := r.decide(req.Key, true, owner)
			if out.Verdict != Approved || out.Slot || out.Request.Promotion.Module != "v1" {
				t.Errorf("Decide(promotion during a turn) = %+v, want approved at once, with v1's code", out)
			}
		}},
		{"a newer proposal replaces the waiting one", func(t *testing.T, r *rig) {
			v1 := r.park(promotionRequest("greet", "v1"))
			other := r.park(promotionRequest("shout", "s1"))
			v2 := r.park(promotionRequest("greet", "v2"))
			if !has(r.notes.settled, v1.Key+":replaced") || slices.Contains(r.waiting(), v1.Key) ||
				!slices.Contains(r.waiting(), other.Key) || !slices.Contains(r.waiting(), v2.Key) {
				t.Fatalf("settled %q, waiting %q; want v1 replaced, shout and v2 waiting", r.notes.settled, r.waiting())
			}
			// v1's buttons can keep nothing, and never v2.
			if out := r.decide(v1.Key, true, owner); out.Verdict != Refused {
				t.Errorf("keeping the replaced v1 = %+v", out)
			}
			if out := r.decide(v2.Key, true, owner); out.Verdict != Approved || out.Request.Promotion.Module != "v2" {
				t.Errorf("keeping v2 = %+v", out)
			}
		}},
		{"a restart keeps what waits", func(t *testing.T, r *rig) {
			r.park(callRequest("t1", "a.txt"))
			r.slot = true
			r.decide("t1", true, owner) // held, in memory only
			r.restart()
			r.slot = false
			if r.auth.HeldCount() != 0 || !slices.Equal(r.waiting(), []string{"t1"}) {
				t.Fatalf("after a restart: held %d, waiting %q", r.auth.HeldCount(), r.waiting())
			}
			if out := r.decide("t1", true, owner); out.Verdict != Approved || out.Request.Digest != r.callDigest("a.txt") {
				t.Errorf("Decide after a restart = %+v", out)
			}
		}},
		{"a damaged row is dropped and said so", func(t *testing.T, r *rig) {
			r.park(callRequest("t1", "a.txt"))
			if _, err := r.store.Approvals().Take(context.Background(), "t1", r.clk.Now(), contracts.ApprovalGone); err != nil {
				t.Fatal(err)
			}
			bad := state.PendingApproval{Turn: "p1", Kind: string(Promotion), Payload: []byte(`"not an object"`),
				Transport: owner.Transport, Chat: owner.Chat, Shown: []Audience{owner}, Created: r.clk.Now(), Expires: r.clk.Now().Add(time.Hour), Digest: "d"}
			if err := r.store.Approvals().Park(context.Background(), bad); err != nil {
				t.Fatal(err)
			}
			if out := r.decide("p1", true, owner); out.Verdict != Refused || !has(r.notes.told, "damaged") || !has(r.notes.settled, "p1:gone") {
				t.Errorf("Decide(damaged) = %+v, told %q", out, r.notes.told)
			}
		}},
		{"renew after an upgrade", func(t *testing.T, r *rig) {
			legacy := callRequest("t1", "a.txt")
			legacy.Digest, legacy.Shown = "", Shown{Note: "writes 1 byte"}
			row, _ := legacy.row()
			row.Created, row.Expires, row.Shown = r.clk.Now(), r.clk.Now().Add(time.Hour), nil
			promo := state.PendingApproval{Turn: "promote-greet", Kind: string(Promotion), Transport: "telegram", Chat: "42",
				Created: r.clk.Now(), Expires: r.clk.Now().Add(time.Hour), Payload: []byte(`{}`)}
			for _, p := range []state.PendingApproval{row, promo} {
				if err := r.store.Approvals().Park(context.Background(), p); err != nil {
					t.Fatal(err)
				}
			}
			r.auth.Renew(context.Background())
			if !slices.Equal(r.waiting(), []string{"t1"}) || !has(r.notes.asked, "t1@telegram/42") || !has(r.notes.settled, "promote-greet:gone") {
				t.Fatalf("after Renew: waiting %q, asked %q, settled %q", r.waiting(), r.notes.asked, r.notes.settled)
			}
			out := r.decide("t1", true, owner)
			if out.Verdict != Approved || out.Request.Digest != r.callDigest("a.txt") || out.Request.Shown.Detail != "write a.txt:\nx" {
				t.Errorf("the renewed call decided = %+v", out)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newRig(t)) })
	}
}

func TestVerify(t *testing.T) {
	r := Request{Key: "k", Digest: "abc"}
	if err := r.Verify("abc"); err != nil {
		t.Errorf("Verify(the approved digest) = %v", err)
	}
	for _, d := range []string{"abd", ""} {
		if err := r.Verify(d); !errors.Is(err, ErrChanged) {
			t.Errorf("Verify(%q) = %v, want ErrChanged", d, err)
		}
	}
	if err := (Request{Key: "k"}).Verify(""); !errors.Is(err, ErrChanged) {
		t.Errorf("Verify on a request without a digest = %v, want ErrChanged: nothing unapproved runs", err)
	}
}

// TestAMessagePastTheCapIsKeptAcrossARestart: a token-cap request keeps
// the owner's message and the figures it was asked with across a
// restart, shows them made visible, needs the turn slot (its Approve
// starts a turn), and its digest binds the message's exact text.
func TestAMessagePastTheCapIsKeptAcrossARestart(t *testing.T) {
	r := newRig(t)
	p := TokenCapPayload{Text: "what is\x1b[2J the weather?", Today: 1500, Cap: 1000}
	req := r.park(Request{Key: NewKey(), Kind: TokenCap, Origin: owner, TokenCap: &p})
	if req.Shown.Detail != `what is\x1b[2J the weather?` || !strings.Contains(req.Shown.Note, "used 1500 tokens, at or over your daily cap of 1000") {
		t.Errorf("RenderTokenCap(%+v) = %+v, want the figures and the message made visible", p, req.Shown)
	}
	if other := (TokenCapPayload{Text: "what is the weather?", Today: 1500, Cap: 1000}); TokenCapDigest(other) == req.Digest {
		t.Errorf("TokenCapDigest(%q) = TokenCapDigest(%q): the digest does not bind the text", other.Text, p.Text)
	}
	r.restart()
	r.slot = true // a turn runs
	if out := r.decide(req.Key, true, owner); out.Verdict != Held {
		t.Fatalf("Approve during a turn = %+v, want it held: it starts a turn of its own", out)
	}
	r.slot = false
	out, ok := r.auth.Held(context.Background())
	if !ok || out.Verdict != Approved || !out.Slot || out.Request.TokenCap == nil || *out.Request.TokenCap != p || out.Request.Verify(TokenCapDigest(p)) != nil {
		t.Fatalf("the held Approve = %+v, %v, want the message and its figures as kept", out, ok)
	}
}
