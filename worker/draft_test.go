package worker_test

import (
	"fmt"
	"strings"
	"testing"

	"shelldon/faces"
	"shelldon/worker"
)

func TestDraftOf(t *testing.T) {
	for _, tt := range []struct{ partial, want string }{
		{"", ""},
		{"Hello", "Hello"},
		{"Hello, owner", "Hello, owner"},
		{"Hello\nTHOUGHT: a new friend", "Hello"},
		{"Hello\nTHOU", "Hello"},
		{"Hello\nthought", "Hello"},
		{"Hello\nTHOUGHT:", "Hello"},
		{"Hello\n  FA", "Hello"},
		{"Hello\nFACE: happy\nBye", "Hello\nBye"},
		{"Hello\nFAR away", "Hello\nFAR away"},
		{"Hello\nTHe cat", "Hello\nTHe cat"},
		{"Noted.\n`", "Noted."},
		{"Noted.\n```", "Noted."},
		{"Noted.\n```o", "Noted."},
		{"Noted.\n```ops", "Noted."},
		{"Noted.\n```ops\n[{\"op\":\"remember\"", "Noted."},
		{"Noted.\n```ops\n[{\"op\":\"remember\",\"topic\":\"t\",\"text\":\"x\"}]\n```\nDone", "Noted.\nDone"},
		{"Noted.\n```ops\nnot json\n```\nDone", "Noted.\nDone"},
		{"Code:\n```python\nprint(1)\n", "Code:\n```python\nprint(1)"},
		{"Code:\n```python\nTHOUGHT: kept in code\n```\n", "Code:\n```python\nTHOUGHT: kept in code\n```"},
		{"<think>the owner asks", ""},
		{"<think>plan</think>Sure", "Sure"},
		{"Sure <thi", "Sure"},
		{"Sure <b>", "Sure <b>"},
		{"Sure\r\nTHOUGHT: x\r\nok", "Sure\nok"},
		{"A\n\n\nTHOUGHT: x\n\nB", "A\n\nB"},
	} {
		if got := worker.DraftOf(tt.partial); got != tt.want {
			t.Errorf("DraftOf(%q) = %q, want %q", tt.partial, got, tt.want)
		}
	}
}

// TestDraftNeverShowsMoreThanTheReply: every prefix of a reply, drafted,
// holds no line the parsed reply leaves out; the whole reply, drafted,
// is the reply's payload.
func TestDraftNeverShowsMoreThanTheReply(t *testing.T) {
	raw := "<think>should I? FACE: grumpy</think>Noted, hazelnut it is.\n" +
		"```ops\n" + `[{"op":"remember","topic":"coffee","text":"likes hazelnut"}]` + "\n```\n" +
		"Anything else?\nTHOUGHT: coffee facts matter\nFACE: happy\n"
	payload := worker.ParseReply(raw, faces.Builtin()).Payload
	for i := range len(raw) + 1 {
		draft := worker.DraftOf(raw[:i])
		for _, hidden := range []string{"think", "should", "grumpy", "```", "op", "hazelnut\"", "THOUGHT", "coffee facts", "FACE", "happy"} {
			if strings.Contains(draft, hidden) {
				t.Fatalf("DraftOf(%q) = %q, which shows %q", raw[:i], draft, hidden)
			}
		}
		if !strings.HasPrefix(payload, draft) {
			t.Errorf("DraftOf(%q) = %q, not the start of the reply %q", raw[:i], draft, payload)
		}
	}
	if got := worker.DraftOf(raw); got != payload {
		t.Errorf("DraftOf(the whole reply) = %q, want its payload %q", got, payload)
	}
}

// BenchmarkDraftOf is what one draft costs the worker: the draft of a
// partial answer is made afresh from all of it each time (at most four a
// second, the broker's coalescing), so its cost grows with the answer; a
// hosted model's chat answer (about 300 characters) and the longest a
// draft may show (4,000, after which the transport cuts it).
func BenchmarkDraftOf(b *testing.B) {
	line := "Sunny and mild this morning, with a light wind from the west; take a coat.\n"
	for _, size := range []int{300, 4000} {
		partial := strings.Repeat(line, size/len(line)+1)[:size]
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				worker.DraftOf(partial)
			}
		})
	}
}
