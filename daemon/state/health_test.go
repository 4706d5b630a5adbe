package state

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestToolHealth(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	now := time.UnixMilli(1_700_000_000_000)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Tools().Strike(ctx, "greet", "boom", now); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	n, err := s.Tools().Strike(ctx, "greet", "boom again", now)
	if err != nil || n != 4 {
		t.Fatalf("fourth Strike = %d, %v; want 4 (every strike counted)", n, err)
	}
	hs, err := s.Tools().Health(ctx)
	if err != nil || len(hs) != 1 || hs[0].Strikes != 4 || hs[0].LastError != "boom again" {
		t.Fatalf("Tools().Health = %+v, %v", hs, err)
	}
	if err := s.Tools().ClearStrikes(ctx, "greet"); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Tools().Strike(ctx, "greet", "again", now); n != 1 {
		t.Errorf("Strike after ClearStrikes = %d, want 1", n)
	}
}

// TestToolUsesAreCountedAndBounded: each call counts, the latest call
// dates it, and only the maxToolUses tools called most lately are kept.
func TestToolUsesAreCountedAndBounded(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		if err := s.Tools().Use(ctx, "greet", start.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	uses, err := s.Tools().Uses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := uses["greet"], (ToolUse{Uses: 3, LastUsed: start.Add(2 * time.Minute)}); !got.LastUsed.Equal(want.LastUsed) || got.Uses != want.Uses {
		t.Errorf(`Tools().Uses()["greet"] = %+v, want %+v`, got, want)
	}
	for i := range maxToolUses + 10 {
		if err := s.Tools().Use(ctx, fmt.Sprintf("tool_%d", i), start.Add(time.Hour+time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if uses, err = s.Tools().Uses(ctx); err != nil {
		t.Fatal(err)
	}
	if len(uses) != maxToolUses {
		t.Errorf("Tools().Uses() after %d tools holds %d, want %d", maxToolUses+11, len(uses), maxToolUses)
	}
	if _, ok := uses["greet"]; ok {
		t.Error("the tool called least lately is still counted past the bound")
	}
	if _, ok := uses[fmt.Sprintf("tool_%d", maxToolUses+9)]; !ok {
		t.Error("the tool called last is not counted")
	}
}
