package state

import (
	"context"
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
			if _, err := s.Strike(ctx, "greet", "boom", now); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	n, err := s.Strike(ctx, "greet", "boom again", now)
	if err != nil || n != 4 {
		t.Fatalf("fourth Strike = %d, %v; want 4 (every strike counted)", n, err)
	}
	hs, err := s.ToolHealths(ctx)
	if err != nil || len(hs) != 1 || hs[0].Strikes != 4 || hs[0].LastError != "boom again" {
		t.Fatalf("ToolHealths = %+v, %v", hs, err)
	}
	if err := s.ClearStrikes(ctx, "greet"); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Strike(ctx, "greet", "again", now); n != 1 {
		t.Errorf("Strike after ClearStrikes = %d, want 1", n)
	}
}
