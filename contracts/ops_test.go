package contracts

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestOpRoundTrip(t *testing.T) {
	ops := []Op{
		{Remember{Topic: "coffee", Text: "hazelnut"}},
		{RewriteAbout{Text: "likes coffee"}},
		{AddFace{Name: "smug", Glyphs: "(¬‿¬)"}},
		{CaptureLearning{Text: "ask before deleting", Tags: []string{"safety"}}},
		{RequestToolApproval{Call: ToolCall{ID: "c1", Name: "write_file", Args: `{"path":"a"}`}, Summary: "write a", Messages: []Message{{Role: ChatUser, Content: "hi"}}}},
		{ProposeTool{Name: "weather", Code: "def run(**k): return 'x'", Test: "def test_x(): pass"}},
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	var back []Op
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("Unmarshal(%s) = %v", raw, err)
	}
	for i := range ops {
		if a, b := mustJSON(t, ops[i]), mustJSON(t, back[i]); a != b {
			t.Errorf("op %d round trip = %s, want %s", i, b, a)
		}
		if err := back[i].Body.Validate(); err != nil {
			t.Errorf("op %d Validate() = %v, want nil", i, err)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestOpDecodeRejects(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `{"op":""}`, `{"op":"nuke"}`, `{"op":"remember","text":1}`,
		`{"op":"remember","text":"x","extra":true}`, `{"op":7}`, `null`,
	} {
		var op Op
		if err := json.Unmarshal([]byte(in), &op); err == nil {
			t.Errorf("Unmarshal(%s) = nil, want an error", in)
		}
	}
}

func TestOpValidate(t *testing.T) {
	long := strings.Repeat("x", MaxRememberBytes+1)
	for _, tc := range []struct {
		name string
		op   OpBody
		want string // "" means valid
	}{
		{"remember ok", Remember{Text: "x"}, ""},
		{"remember empty", Remember{Text: "  "}, "text is empty"},
		{"remember too long", Remember{Text: long}, "over the cap"},
		{"remember bad topic", Remember{Topic: "../etc", Text: "x"}, "topic"},
		{"remember bad utf8", Remember{Text: "\xff"}, "UTF-8"},
		{"about too long", RewriteAbout{Text: strings.Repeat("a", MaxAboutBytes+1)}, "over the cap"},
		{"face bad name", AddFace{Name: "Big Face", Glyphs: "(o)"}, "name"},
		{"face too many glyphs", AddFace{Name: "wide", Glyphs: strings.Repeat("o", MaxFaceGlyphs+1)}, "characters"},
		{"face unprintable", AddFace{Name: "bell", Glyphs: "(\a)"}, "unprintable"},
		{"learning tags", CaptureLearning{Text: "x", Tags: []string{"a", "b", "c", "d", "e", "f"}}, "tags"},
		{"approval bad args", RequestToolApproval{Call: ToolCall{ID: "1", Name: "git", Args: "[1]"}, Summary: "s", Messages: []Message{{}}}, "JSON object"},
		{"approval no messages", RequestToolApproval{Call: ToolCall{ID: "1", Name: "git", Args: "{}"}, Summary: "s"}, "messages"},
		{"tool bad name", ProposeTool{Name: "1abc", Code: "x", Test: "y"}, "identifier"},
		{"tool no test", ProposeTool{Name: "abc", Code: "x"}, "test is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalidOp)):
				t.Errorf("Validate() = %v, want an ErrInvalidOp mentioning %q", err, tc.want)
			}
		})
	}
}
