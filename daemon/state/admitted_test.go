package state

import (
	"context"
	"testing"
	"time"

	"shelldon/daemon/statedir"
)

// TestAdmittedMessagesAreKeptUntilAnswered: a message admitted is the
// owner's until a turn answers it, across a reopen (as a restart); a
// transport delivering it again gets the one kept.
func TestAdmittedMessagesAreKeptUntilAnswered(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	s := openStore(t, l)
	ctx := context.Background()
	a, again, err := s.Intake().Admit(ctx, Admitted{Transport: "telegram", Chat: "42", Ref: "1001", Text: "A", At: epoch})
	if err != nil || again {
		t.Fatalf("Admit(A) = %d, %v, %v", a, again, err)
	}
	b, _, _ := s.Intake().Admit(ctx, Admitted{Transport: "telegram", Chat: "42", Ref: "1002", Text: "B", At: epoch})
	c, _, _ := s.Intake().Admit(ctx, Admitted{Transport: "cli", Text: "C", At: epoch})
	if same, again, err := s.Intake().Admit(ctx, Admitted{Transport: "telegram", Chat: "42", Ref: "1001", Text: "A", At: epoch}); err != nil || !again || same != a {
		t.Errorf("Admit(A again) = %d, %v, %v; want %d again", same, again, err, a)
	}
	if err := s.Intake().TakeUp(ctx, "t1", []int64{a, b}); err != nil {
		t.Fatal(err)
	}
	if err := s.Intake().Answered(ctx, []int64{a}, epoch.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	s.Close() // a restart
	s = openStore(t, l)
	left, err := s.Intake().Unanswered(ctx)
	if err != nil || len(left) != 2 || left[0].ID != b || left[0].Turn != "t1" || left[0].Tries != 1 || left[0].Text != "B" || left[1].ID != c || left[1].Turn != "" {
		t.Fatalf("Unanswered after a restart = %+v, %v; want B (taken up by t1) and C (waiting)", left, err)
	}
	// Answered and pruned, a redelivery is a new message again.
	if err := s.Intake().PruneAnswered(ctx, epoch.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, again, _ := s.Intake().Admit(ctx, Admitted{Transport: "telegram", Chat: "42", Ref: "1001", Text: "A", At: epoch}); again {
		t.Error("a message pruned long after its answer is still recognised")
	}
}
