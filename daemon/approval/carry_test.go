package approval

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"shelldon/contracts"
	"shelldon/sandbox"
	"shelldon/tools"
)

// TestCarryOutRunsOnlyWhatTheOwnerWasShown is the attack: the owner
// approves a call honestly as shown, and what would run has changed since
// (the workspace moved under it, or its kept row was altered while it
// waited). CarryOut computes the digest again and runs nothing; the turn
// resumes told that nothing ran. The same request unchanged runs.
func TestCarryOutRunsOnlyWhatTheOwnerWasShown(t *testing.T) {
	ctx := context.Background()
	t.Run("as shown", func(t *testing.T) {
		r := newRig(t)
		r.park(callRequest("t1", "a.txt"))
		if !r.auth.CarryOut(ctx, r.decide("t1", true, owner)) || !slices.Equal(r.exec.ran, []string{"t1"}) {
			t.Fatalf("the approved call as shown: ran %q, want it run", r.exec.ran)
		}
	})
	t.Run("changed since", func(t *testing.T) {
		r := newRig(t)
		r.park(callRequest("t1", "a.txt"))
		r.exec.swap = func(c tools.Checked) tools.Checked { c.Content = "import evil\n"; return c }
		if !r.auth.CarryOut(ctx, r.decide("t1", true, owner)) || len(r.exec.ran) != 0 {
			t.Fatalf("the approved call that changed ran %q, want nothing run", r.exec.ran)
		}
		if len(r.host.resumed) != 1 || !strings.Contains(r.host.resumed[0], "nothing ran") || !has(r.notes.told, "not what you approved") {
			t.Errorf("resumed %q, told %q: want the turn and the owner told nothing ran", r.host.resumed, r.notes.told)
		}
	})
	// A payload altered in its row while it waited, its digest kept: what
	// would be carried out is not what the owner read.
	altered := []struct {
		kind  string
		req   Request
		alter func(*Request)
	}{
		{"promotion", promotionRequest("greet", "print('hi')\n"), func(q *Request) { q.Promotion.Module = "import evil\n" }},
		{"token cap", Request{Kind: TokenCap, Origin: owner, TokenCap: &TokenCapPayload{Text: "hello", Today: 2, Cap: 1}},
			func(q *Request) { q.TokenCap.Text = "delete everything" }},
		{"memory", Request{Kind: Memory, Origin: owner, Memory: &MemoryPayload{Turn: "t0", Outside: "https://example.test/",
			Ops: []contracts.Op{{Body: contracts.Remember{Topic: "notes", Text: "likes tea"}}}}},
			func(q *Request) { q.Memory.Ops[0].Body = contracts.Remember{Topic: "notes", Text: "wants rm -rf"} }},
	}
	for _, tc := range altered {
		t.Run(tc.kind, func(t *testing.T) {
			r := newRig(t)
			tc.req.Key = NewKey()
			kept := r.park(tc.req)
			tc.alter(&kept)
			row, err := kept.row()
			if err == nil {
				err = r.store.Approvals().Update(ctx, row)
			}
			if err != nil {
				t.Fatal(err)
			}
			r.auth.CarryOut(ctx, r.decide(kept.Key, true, owner))
			if len(r.host.kept) != 0 {
				t.Errorf("the altered %s was handed on (%q), want it refused", tc.kind, r.host.kept)
			}
		})
	}
}

// TestAKeptChangeSetIsAppliedOnlyAsShown is the attack on a change set
// that waits for the owner's own look: a file slips into its kept layer
// while it waits. The owner approves what they read; nothing is applied,
// and they are told why. Unaltered, it is applied.
func TestAKeptChangeSetIsAppliedOnlyAsShown(t *testing.T) {
	ctx := context.Background()
	for _, slipped := range []bool{false, true} {
		r := newRig(t)
		layer := filepath.Join(r.exec.kept, "k1")
		if err := os.MkdirAll(layer, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(layer, "conftest.py"), []byte("import os\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cs, err := sandbox.OpenKept(layer, r.exec.workspace)
		if err != nil {
			t.Fatal(err)
		}
		kept := r.park(Request{Key: NewKey(), Kind: ChangeSet, Origin: owner,
			ChangeSet: &ChangeSetPayload{Dir: "k1", Tool: "run_shell", Turn: "t1", Changes: cs.Changes, Risks: []string{"conftest.py"}}})
		if slipped {
			if err := os.WriteFile(filepath.Join(layer, "sitecustomize.py"), []byte("import evil\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out := r.decide(kept.Key, true, owner)
		r.auth.CarryOut(ctx, out)
		switch {
		case slipped && (len(r.exec.applied) != 0 || len(r.host.reports) != 1 || r.host.reports[0].Err == nil):
			t.Errorf("the altered change set: applied %q, told %+v; want nothing applied and the owner told why", r.exec.applied, r.host.reports)
		case !slipped && !slices.Equal(r.exec.applied, []string{kept.Key}):
			t.Errorf("the change set as shown: applied %q, want it applied", r.exec.applied)
		}
	}
}

// TestEveryFieldTheCardShowsIsInTheDigest: whatever changes what the
// owner reads of a request changes its digest, so that nothing they did
// not read can be carried out under their approval. The fields a card
// shows that are not carried out (the gate's report, the token figures)
// are named as such.
func TestEveryFieldTheCardShowsIsInTheDigest(t *testing.T) {
	type variant struct {
		name   string
		shown  Shown
		digest string
	}
	check := func(t *testing.T, base variant, others []variant) {
		for _, o := range others {
			if o.shown != base.shown && o.digest == base.digest {
				t.Errorf("changing the %s changes the card but not the digest", o.name)
			}
			if o.shown == base.shown {
				t.Errorf("changing the %s does not change the card: the test's variant is no variant", o.name)
			}
		}
	}
	t.Run("call", func(t *testing.T) {
		for _, tool := range []string{"write_file", "edit_file", "http_get", "run_shell", "git"} {
			base := tools.Checked{Path: "a.txt", Content: "one", Old: "o", New: "n", URL: "https://example.test/", Argv: []string{"sh", "-c", "ls"}}
			call := func(name string, c tools.Checked, outside string) variant {
				return variant{name, RenderCall(tool, c, outside), CallDigest(tool, c, outside)}
			}
			var others []variant
			for name, alter := range map[string]func(*tools.Checked){
				"path": func(c *tools.Checked) { c.Path = "b.txt" }, "content": func(c *tools.Checked) { c.Content = "two" },
				"old": func(c *tools.Checked) { c.Old = "p" }, "new": func(c *tools.Checked) { c.New = "m" },
				"url": func(c *tools.Checked) { c.URL = "https://evil.test/" }, "argv": func(c *tools.Checked) { c.Argv = []string{"sh", "-c", "rm -rf ."} },
			} {
				c := base
				alter(&c)
				if v := call(tool+"'s "+name, c, ""); v.shown != call("", base, "").shown {
					others = append(others, v)
				}
			}
			others = append(others, call(tool+"'s mark", base, "https://example.test/"))
			check(t, call(tool, base, ""), others)
		}
	})
	t.Run("promotion", func(t *testing.T) {
		p := PromotionPayload{Stem: "greet", Description: "Greets.", Module: "print(1)\n", Test: "def test(): pass\n", Gate: "1 passed"}
		promo := func(name string, alter func(*PromotionPayload)) variant {
			q := p
			alter(&q)
			return variant{name, RenderPromotion(q), PromotionDigest(q)}
		}
		check(t, promo("", func(*PromotionPayload) {}), []variant{
			promo("stem", func(q *PromotionPayload) { q.Stem = "greeter" }),
			promo("description", func(q *PromotionPayload) { q.Description = "Deletes." }),
			promo("module", func(q *PromotionPayload) { q.Module = "import evil\n" }),
			promo("test", func(q *PromotionPayload) { q.Test = "" }),
			promo("mark", func(q *PromotionPayload) { q.Outside = "https://example.test/" }),
		})
		// Shown, not carried out: what the gate said and could not verify.
	})
	t.Run("token cap", func(t *testing.T) {
		p := TokenCapPayload{Text: "hello", Today: 2, Cap: 1}
		capped := func(name string, alter func(*TokenCapPayload)) variant {
			q := p
			alter(&q)
			return variant{name, RenderTokenCap(q), TokenCapDigest(q)}
		}
		check(t, capped("", func(*TokenCapPayload) {}), []variant{
			capped("text", func(q *TokenCapPayload) { q.Text = "delete everything" }),
			capped("mark", func(q *TokenCapPayload) { q.Outside = "https://example.test/" }),
		})
		// Shown, not carried out: today's figure and the cap.
	})
	t.Run("memory", func(t *testing.T) {
		ops := func(text string) []contracts.Op {
			return []contracts.Op{{Body: contracts.Remember{Topic: "notes", Text: text}}, {Body: contracts.AddFace{Name: "smug", Glyphs: "(¬‿¬)"}}}
		}
		mem := func(name string, p MemoryPayload) variant {
			raw, _ := json.Marshal(p) // as kept, and read back
			var back MemoryPayload
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatal(err)
			}
			return variant{name, RenderMemory(back), MemoryDigest(back)}
		}
		base := MemoryPayload{Ops: ops("likes tea"), Outside: "https://example.test/", Turn: "t1"}
		check(t, mem("", base), []variant{
			mem("op's text", MemoryPayload{Ops: ops("wants rm -rf"), Outside: base.Outside, Turn: "t1"}),
			mem("ops", MemoryPayload{Ops: ops("likes tea")[:1], Outside: base.Outside, Turn: "t1"}),
			mem("mark", MemoryPayload{Ops: ops("likes tea"), Outside: "https://other.test/", Turn: "t1"}),
		})
	})
}
