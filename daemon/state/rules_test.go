package state

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestRulesAreBoundedRenewedRevokedAndExpire: a shape granted again is
// the same rule renewed; the table holds at most MaxRules; a revoked or
// expired rule is gone, and a use of one that is gone says so.
func TestRulesAreBoundedRenewedRevokedAndExpire(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	now := time.UnixMilli(1_700_000_000_000)
	grant := func(pattern string, life time.Duration) Rule {
		t.Helper()
		r, err := s.Rules().Grant(ctx, Rule{Tool: "run_shell", Pattern: pattern, Words: "run_shell of exactly `" + pattern + "`", Granted: now, Expires: now.Add(life)})
		if err != nil {
			t.Fatalf("Rules().Grant(%q) = %v", pattern, err)
		}
		return r
	}
	first := grant("python3 build.py", time.Hour)
	if err := s.Rules().Use(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	again := grant("python3 build.py", 2*time.Hour)
	if again.ID != first.ID || again.Uses != 1 || !again.Expires.Equal(now.Add(2*time.Hour)) {
		t.Errorf("granting a shape again = %+v, want rule %d renewed to %v with its 1 use", again, first.ID, now.Add(2*time.Hour))
	}
	for i := 1; i < MaxRules; i++ {
		grant(fmt.Sprintf("touch %d", i), time.Minute)
	}
	if _, err := s.Rules().Grant(ctx, Rule{Tool: "run_shell", Pattern: "one too many", Words: "x", Granted: now, Expires: now.Add(time.Hour)}); !errors.Is(err, ErrTooManyRules) {
		t.Errorf("Rules().Grant past %d rules = %v, want ErrTooManyRules", MaxRules, err)
	}
	expired, err := s.Rules().Expire(ctx, now.Add(time.Minute))
	if err != nil || len(expired) != MaxRules-1 {
		t.Errorf("Rules().Expire = %d rules, %v; want the %d that lived a minute", len(expired), err, MaxRules-1)
	}
	if r, err := s.Rules().Revoke(ctx, first.ID); err != nil || r.Pattern != "python3 build.py" {
		t.Errorf("Rules().Revoke(%d) = %+v, %v", first.ID, r, err)
	}
	if _, err := s.Rules().Revoke(ctx, first.ID); !errors.Is(err, ErrNoRule) {
		t.Errorf("Rules().Revoke of a revoked rule = %v, want ErrNoRule", err)
	}
	if err := s.Rules().Use(ctx, first.ID); !errors.Is(err, ErrNoRule) {
		t.Errorf("Rules().Use of a revoked rule = %v, want ErrNoRule", err)
	}
	if left, err := s.Rules().All(ctx); err != nil || len(left) != 0 {
		t.Errorf("Rules = %+v, %v; want none", left, err)
	}
}
