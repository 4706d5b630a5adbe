package state

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"shelldon/contracts"
)

func TestHistoryOrderAndLimit(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	base := time.UnixMilli(1_700_000_000_000)
	for i := range 5 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		if err := s.History().Append(ctx, fmt.Sprintf("t%d", i/2), role, fmt.Sprintf("m%d", i), base.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		n    int
		want string
	}{
		{0, ""}, {-3, ""}, {1, "m4"}, {3, "m2 m3 m4"}, {5, "m0 m1 m2 m3 m4"}, {50, "m0 m1 m2 m3 m4"},
	}
	for _, tt := range tests {
		entries, err := s.History().Recent(ctx, tt.n)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, e := range entries {
			texts = append(texts, e.Text)
		}
		if got := strings.Join(texts, " "); got != tt.want {
			t.Errorf("History().Recent(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	entries, _ := s.History().Recent(ctx, 2)
	if entries[0].Role != "assistant" || entries[1].Role != "user" || !entries[1].At.Equal(base.Add(4*time.Second)) {
		t.Errorf("History().Recent(2) = %+v, want roles and times kept", entries)
	}
}

func TestAppendHistoryRefusesUnknownRoles(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for _, role := range []string{"", "system", "tool", "User"} {
		if err := s.History().Append(ctx, "t", role, "x", time.Now()); err == nil || !strings.Contains(err.Error(), "role") {
			t.Errorf("History().Append(role %q) = %v, want a role error", role, err)
		}
	}
	if entries, _ := s.History().Recent(ctx, 10); len(entries) != 0 {
		t.Errorf("refused appends left %d entries", len(entries))
	}
}

func TestAddLearning(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	at := time.UnixMilli(42)
	if err := s.Memories().Keep(ctx, "t1", Memory{Learnings: []contracts.CaptureLearning{{Text: "ask before assuming", Tags: []string{"time", "habits"}}}}, at); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name string
		text string
		tags []string
	}{
		{"empty text", " ", nil},
		{"oversize text", strings.Repeat("x", 1001), nil},
		{"bad tag", "ok", []string{"Not A Slug"}},
		{"comma tag", "ok", []string{"a,b"}},
		{"too many tags", "ok", []string{"a", "b", "c", "d", "e", "f"}},
	}
	for _, tt := range bad {
		if err := s.Memories().Keep(ctx, "t1", Memory{Learnings: []contracts.CaptureLearning{{Text: tt.text, Tags: tt.tags}}}, at); err == nil {
			t.Errorf("Keep of a learning with %s = nil, want an error", tt.name)
		}
	}
	rows, err := s.db.Query(`SELECT turn, text, tags, at FROM learnings`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var turn, text, tags string
		var ms int64
		if err := rows.Scan(&turn, &text, &tags, &ms); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s|%s|%s|%d", turn, text, tags, ms))
	}
	if want := "t1|ask before assuming|time,habits|42"; len(got) != 1 || got[0] != want {
		t.Errorf("learnings = %v, want [%s]", got, want)
	}
}

// TestHistoryIsBounded: a huge message or answer is kept cut, with a note,
// and the history given to a turn fits its byte budget, newest first, so
// that no single large exchange follows every later turn to its failure.
func TestHistoryIsBounded(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	huge := strings.Repeat("é", 2<<20) // 4 MiB of two-byte characters
	if err := s.History().Append(ctx, "t1", contracts.ChatAssistant, huge, epoch); err != nil {
		t.Fatal(err)
	}
	got, err := s.History().Recent(ctx, 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("History().Recent = %d entries, %v", len(got), err)
	}
	if n := len(got[0].Text); n > MaxHistoryEntryBytes+200 || !strings.Contains(got[0].Text, "only its first 16 KiB are kept") || !utf8.ValidString(got[0].Text) {
		t.Errorf("the kept entry is %d bytes, valid UTF-8 %v, ending %q; want it cut with a note", n, utf8.ValidString(got[0].Text), got[0].Text[len(got[0].Text)-80:])
	}
	for i := range 20 {
		if err := s.History().Append(ctx, fmt.Sprintf("t%d", i+2), contracts.ChatUser, strings.Repeat("x", 10<<10), epoch); err != nil {
			t.Fatal(err)
		}
	}
	got, err = s.History().Recent(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, e := range got {
		size += len(e.Text)
	}
	if size > MaxHistoryBytes || len(got) != MaxHistoryBytes/(10<<10) {
		t.Errorf("History().Recent gave %d entries of %d bytes in all, want the newest that fit in %d", len(got), size, MaxHistoryBytes)
	}
}
