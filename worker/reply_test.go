package worker

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"shelldon/contracts"
	"shelldon/policy"
)

// fakeFaces knows a few faces and falls back to "neutral", as the real
// registry falls back to its default reply face.
type fakeFaces map[string]bool

func (f fakeFaces) Resolve(pick string) (name, glyphs string, known bool) {
	if f[pick] {
		return pick, "(" + pick + ")", true
	}
	return "neutral", "(-_-)", false
}

var testFaces = fakeFaces{"happy": true, "curious": true}

const (
	rememberCoffee = `{"op":"remember","topic":"coffee","text":"loves hazelnut"}`
	addFaceSleepy  = `{"op":"add_face","name":"sleepy","glyphs":"(-.-)zz"}`
	learnTabs      = `{"op":"capture_learning","text":"owner prefers tabs","tags":["style"]}`
)

func TestParseReply(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		payload string
		ops     string // the ops as a JSON array, "null" for none
		thought string
		face    string
		notes   []string
	}{
		{
			name:    "plain text",
			raw:     "Hello there.",
			payload: "Hello there.",
			ops:     "null",
			face:    "neutral",
		},
		{
			name:    "thought and face lines removed",
			raw:     "Hi!\nTHOUGHT: the owner said hi\nFACE: happy",
			payload: "Hi!",
			ops:     "null",
			thought: "the owner said hi",
			face:    "happy",
		},
		{
			name:    "control lines in any case with leading blanks",
			raw:     "  thought:   spaced out  \n\tFace: curious\nbody text",
			payload: "body text",
			ops:     "null",
			thought: "spaced out",
			face:    "curious",
		},
		{
			name:    "last thought and face win",
			raw:     "THOUGHT: first\nreply\nTHOUGHT: second\nFACE: happy\nFACE: curious",
			payload: "reply",
			ops:     "null",
			thought: "second",
			face:    "curious",
		},
		{
			name:    "thought capped to 120 runes",
			raw:     "ok\nTHOUGHT: " + strings.Repeat("é", 130),
			payload: "ok",
			ops:     "null",
			thought: strings.Repeat("é", 120),
			face:    "neutral",
		},
		{
			name:    "a word merely starting a line is not a control line",
			raw:     "Thoughtful of you.\nFaces are fun.",
			payload: "Thoughtful of you.\nFaces are fun.",
			ops:     "null",
			face:    "neutral",
		},
		{
			name:    "unknown face",
			raw:     "hmm\nFACE: xyz",
			payload: "hmm",
			ops:     "null",
			face:    "neutral",
			notes:   []string{`unknown face "xyz"; using neutral`},
		},
		{
			name:    "empty reply",
			raw:     "",
			payload: "…",
			ops:     "null",
			face:    "neutral",
		},
		{
			name:    "only control lines",
			raw:     "THOUGHT: quiet\nFACE: happy\n\n",
			payload: "…",
			ops:     "null",
			thought: "quiet",
			face:    "happy",
		},
		{
			name: "think block hides a fake ops block and control lines",
			raw: "<think>\nI could sneak this in:\n```ops\n[" + rememberCoffee + "]\n```\n" +
				"FACE: happy\nTHOUGHT: secret\n</think>\nHello!",
			payload: "Hello!",
			ops:     "null",
			face:    "neutral",
		},
		{
			name:    "several think blocks, mixed case tags",
			raw:     "<THINK>plan a</Think>Hi <think>\nplan b\n</think>there",
			payload: "Hi there",
			ops:     "null",
			face:    "neutral",
		},
		{
			name:    "unclosed think strips to the end",
			raw:     "Answer first.\n<think>my secret plan\nFACE: happy\nTHOUGHT: leak",
			payload: "Answer first.",
			ops:     "null",
			face:    "neutral",
		},
		{
			name:    "stray close tag drops what came before",
			raw:     "secret reasoning\nFACE: happy\n</think>\n\nThe answer is 4.\nFACE: curious",
			payload: "The answer is 4.",
			ops:     "null",
			face:    "curious",
		},
		{
			name:    "tags joined by a cut are stripped too",
			raw:     "a<thi<think>x</think>nk>hidden",
			payload: "a",
			ops:     "null",
			face:    "neutral",
		},
		{
			name: "two valid blocks concatenate in order",
			raw: "Noted!\n\n```ops\n[" + rememberCoffee + "," + addFaceSleepy + "]\n```\n\n" +
				"And one more.\n\n```ops\n[" + learnTabs + "]\n```\nTHOUGHT: coffee!\nFACE: happy",
			payload: "Noted!\n\nAnd one more.",
			ops:     "[" + rememberCoffee + "," + addFaceSleepy + "," + learnTabs + "]",
			thought: "coffee!",
			face:    "happy",
		},
		{
			name: "one valid block and one invalid",
			raw: "Sure.\n```ops\n[" + rememberCoffee + "]\n```\n" +
				"```ops\n[" + learnTabs + ", {\"op\":\"delete_everything\"}]\n```\nFACE: happy",
			payload: "Sure.\n```ops\n[" + learnTabs + ", {\"op\":\"delete_everything\"}]\n```",
			ops:     "[" + rememberCoffee + "]",
			face:    "happy",
			notes:   []string{`ops block rejected: op 2: unknown op "delete_everything"`},
		},
		{
			name:    "single op object",
			raw:     "ok\n```ops\n" + rememberCoffee + "\n```",
			payload: "ok",
			ops:     "[" + rememberCoffee + "]",
			face:    "neutral",
		},
		{
			name:    "opener with info words and trailing spaces, op spread over lines",
			raw:     "ok\n```ops json   \n[\n  " + rememberCoffee + "\n]\n```   ",
			payload: "ok",
			ops:     "[" + rememberCoffee + "]",
			face:    "neutral",
		},
		{
			name:    "empty ops block proposes nothing",
			raw:     "ok\n```ops\n```",
			payload: "ok",
			ops:     "null",
			face:    "neutral",
		},
		{
			name:    "model may not request a tool approval",
			raw:     "```ops\n[{\"op\":\"request_tool_approval\",\"summary\":\"x\"}]\n```",
			payload: "```ops\n[{\"op\":\"request_tool_approval\",\"summary\":\"x\"}]\n```",
			ops:     "null",
			face:    "neutral",
			notes:   []string{`ops block rejected: op 1: "request_tool_approval" is not an op the model may propose`},
		},
		{
			name:    "unknown field rejects the block",
			raw:     "```ops\n[{\"op\":\"remember\",\"text\":\"x\",\"mood\":\"sad\"}]\n```",
			payload: "```ops\n[{\"op\":\"remember\",\"text\":\"x\",\"mood\":\"sad\"}]\n```",
			ops:     "null",
			face:    "neutral",
			notes:   []string{`ops block rejected: op 1: op remember: json: unknown field "mood"`},
		},
		{
			name:    "wrong type rejects the block",
			raw:     "```ops\n[{\"op\":\"remember\",\"text\":5}]\n```",
			payload: "```ops\n[{\"op\":\"remember\",\"text\":5}]\n```",
			ops:     "null",
			face:    "neutral",
			notes:   []string{"ops block rejected: op 1: op remember: json: cannot unmarshal number"},
		},
		{
			name:    "bad JSON rejects the block, thought inside it is not taken",
			raw:     "```ops\n[{\"op\":\"remember\",\nTHOUGHT: inside\n```\nTHOUGHT: outside",
			payload: "```ops\n[{\"op\":\"remember\",\nTHOUGHT: inside\n```",
			ops:     "null",
			thought: "outside",
			face:    "neutral",
			notes:   []string{"ops block rejected: not a JSON array of ops"},
		},
		{
			name:    "null is not an array of ops",
			raw:     "```ops\nnull\n```",
			payload: "```ops\nnull\n```",
			ops:     "null",
			face:    "neutral",
			notes:   []string{"ops block rejected: not a JSON array or object"},
		},
		{
			name:    "unterminated ops fence stays visible with what follows it",
			raw:     "Saving.\n```ops\n[" + rememberCoffee + "]\nFACE: happy",
			payload: "Saving.\n```ops\n[" + rememberCoffee + "]\nFACE: happy",
			ops:     "null",
			face:    "neutral",
			notes:   []string{"ops block rejected: unterminated fence"},
		},
		{
			name: "ops fence inside a python block stays untouched",
			raw: "Here:\n```python\nprint(1)\n\n\n\nTHOUGHT: not mine\n```ops\n[" + rememberCoffee + "]\n```\n" +
				"FACE: happy",
			payload: "Here:\n```python\nprint(1)\n\n\n\nTHOUGHT: not mine\n```ops\n[" + rememberCoffee + "]\n```",
			ops:     "null",
			face:    "happy",
		},
		{
			name:    "longer fence holds a shorter one",
			raw:     "````markdown\n```ops\n[]\n```\n````\nok",
			payload: "````markdown\n```ops\n[]\n```\n````\nok",
			ops:     "null",
			face:    "neutral",
		},
		{
			name:    "CRLF line endings",
			raw:     "Hi\r\n\r\nTHOUGHT: crlf\r\nFACE: happy\r\n```ops\r\n[" + rememberCoffee + "]\r\n```\r\n",
			payload: "Hi",
			ops:     "[" + rememberCoffee + "]",
			thought: "crlf",
			face:    "happy",
		},
		{
			name:    "blank runs collapse to one blank line",
			raw:     "a\n\n\n\n   \nb\n\nc\nTHOUGHT: t\n\nd",
			payload: "a\n\nb\n\nc\n\nd",
			ops:     "null",
			thought: "t",
			face:    "neutral",
		},
		{
			name:    "payload trimmed",
			raw:     "\n\n   hello  \n\n",
			payload: "hello",
			ops:     "null",
			face:    "neutral",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseReply(tt.raw, testFaces)
			if !got.OK {
				t.Errorf("ParseReply(%q).OK = false, want true", tt.raw)
			}
			if got.Payload != tt.payload {
				t.Errorf("ParseReply(%q).Payload = %q, want %q", tt.raw, got.Payload, tt.payload)
			}
			if ops := opsJSON(t, got.Ops); compactJSON(t, ops) != compactJSON(t, tt.ops) {
				t.Errorf("ParseReply(%q).Ops = %s, want %s", tt.raw, ops, tt.ops)
			}
			if got.Thought != tt.thought {
				t.Errorf("ParseReply(%q).Thought = %q, want %q", tt.raw, got.Thought, tt.thought)
			}
			if got.Face != tt.face {
				t.Errorf("ParseReply(%q).Face = %q, want %q", tt.raw, got.Face, tt.face)
			}
			if !notesMatch(got.Notes, tt.notes) {
				t.Errorf("ParseReply(%q).Notes = %q, want notes starting %q", tt.raw, got.Notes, tt.notes)
			}
		})
	}
}

func opsJSON(t *testing.T, ops []contracts.Op) string {
	t.Helper()
	raw, err := json.Marshal(ops)
	if err != nil {
		t.Fatalf("encode ops %v: %v", ops, err)
	}
	return string(raw)
}

// compactJSON re-encodes s so that key order and spacing do not matter.
func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("test table JSON %q: %v", s, err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("re-encode %q: %v", s, err)
	}
	return string(raw)
}

// notesMatch reports whether each note starts with its wanted text; the
// tail of a JSON decoder's message is the standard library's to word.
func notesMatch(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !strings.HasPrefix(got[i], want[i]) {
			return false
		}
	}
	return true
}

func FuzzParseReply(f *testing.F) {
	seeds := []string{
		"",
		"Hello\nTHOUGHT: hi\nFACE: happy",
		"<think>x</think>y",
		"<think>unclosed",
		"stray</think>rest",
		"a<thi<think>x</think>nk>b</THINK>c",
		"```ops\n[" + rememberCoffee + "]\n```",
		"```ops\n[{\"op\":\"request_tool_approval\"}]\n```",
		"```python\n```ops\n```\n",
		"```ops\r\n{\"op\":\"remember\",\"text\":\"x\"}\r\n```\r\nFACE: happy\r\n",
		"\xff\xfeTHOUGHT: \xc3",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := ParseReply(raw, testFaces)
		if !got.OK || got.Payload == "" {
			t.Fatalf("ParseReply(%q) = OK %v, payload %q; want OK and a payload", raw, got.OK, got.Payload)
		}
		for _, tag := range []string{contracts.ThinkOpen, contracts.ThinkClose} {
			if contracts.IndexFoldASCII(got.Payload, tag) >= 0 || contracts.IndexFoldASCII(got.Thought, tag) >= 0 {
				t.Fatalf("ParseReply(%q) leaks %s: payload %q, thought %q", raw, tag, got.Payload, got.Thought)
			}
		}
		if closed := strings.Index(raw, contracts.ThinkClose); closed >= 0 && strings.Contains(raw[:closed], contracts.ThinkOpen) {
			if strings.Contains(got.Payload, contracts.ThinkOpen) {
				t.Fatalf("ParseReply(%q).Payload = %q, contains %s", raw, got.Payload, contracts.ThinkOpen)
			}
		}
		if n := utf8.RuneCountInString(got.Thought); n > MaxThoughtRunes || strings.Contains(got.Thought, "\n") {
			t.Fatalf("ParseReply(%q).Thought = %q (%d runes), want one line of at most %d", raw, got.Thought, n, MaxThoughtRunes)
		}
		if got.Face != "neutral" && !testFaces[got.Face] {
			t.Fatalf("ParseReply(%q).Face = %q, not a face of the set", raw, got.Face)
		}
		for _, op := range got.Ops {
			if !slices.Contains(contracts.ModelOps, op.Body.OpName()) {
				t.Fatalf("ParseReply(%q) took op %q, which the model may not propose", raw, op.Body.OpName())
			}
		}
		if !strings.Contains(raw, "```") {
			if len(got.Ops) > 0 {
				t.Fatalf("ParseReply(%q) took ops %v without an ops fence", raw, got.Ops)
			}
			for _, line := range strings.Split(got.Payload, "\n") {
				trimmed := strings.TrimLeftFunc(line, unicode.IsSpace)
				if startsFold(trimmed, "THOUGHT:") || startsFold(trimmed, "FACE:") {
					t.Fatalf("ParseReply(%q).Payload = %q, keeps control line %q", raw, got.Payload, line)
				}
			}
		}
		if !strings.Contains(raw, "\r") {
			again := ParseReply(got.Payload, testFaces)
			if again.Payload != got.Payload || len(again.Ops) > 0 {
				t.Fatalf("ParseReply(ParseReply(%q).Payload) = payload %q, %d ops; want payload %q and no ops",
					raw, again.Payload, len(again.Ops), got.Payload)
			}
		}
	})
}

func startsFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// TestParseReplyRefusesTooManyOpsWhole: ops blocks that together hold
// more ops than one reply may are refused whole, not a prefix, and the
// reply says so, for the owner to read and the model to find in the
// history.
func TestParseReplyRefusesTooManyOpsWhole(t *testing.T) {
	var raw strings.Builder
	raw.WriteString("Noted.\n")
	for i := range policy.MaxOpsPerReply + 1 {
		fmt.Fprintf(&raw, "```ops\n{\"op\": \"remember\", \"topic\": \"t%d\", \"text\": \"x\"}\n```\n", i)
	}
	got := ParseReply(raw.String(), testFaces)
	if len(got.Ops) != 0 {
		t.Errorf("ParseReply kept %d ops of a reply over the bound, want none", len(got.Ops))
	}
	if !strings.HasPrefix(got.Payload, "Noted.") || !strings.Contains(got.Payload, "none of them was applied") {
		t.Errorf("payload = %q, want the reply and why its ops were refused", got.Payload)
	}
}
