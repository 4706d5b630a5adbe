package setup

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"shelldon/config"
)

var local = config.Provider{Name: "ollama", BaseURL: "http://10.0.0.2:11434/v1", Model: "qwen2.5:7b"}

func TestSetProvider(t *testing.T) {
	tests := []struct {
		name, old, want string
	}{
		{"empty file", "", "[[provider]]\nname = \"ollama\"\nbase_url = \"http://10.0.0.2:11434/v1\"\nmodel = \"qwen2.5:7b\"\n"},
		{"keys kept, table appended",
			"# mine\nstate_dir = \"/x\"\n\n[mood]\nnight = \"22:00-06:00\"\n",
			"# mine\nstate_dir = \"/x\"\n\n[mood]\nnight = \"22:00-06:00\"\n\n[[provider]]\nname = \"ollama\"\nbase_url = \"http://10.0.0.2:11434/v1\"\nmodel = \"qwen2.5:7b\"\n"},
		{"first in the chain, the others kept",
			"[[provider]]\nname = \"groq\"\nmodel = \"m\"\n\n# the fallback\n[[provider]]\nname = \"ollama\"\nmodel = \"old\"\ntimeout = \"30s\"\n\n[mood]\nnight = \"x\"\n",
			"[[provider]]\nname = \"ollama\"\nbase_url = \"http://10.0.0.2:11434/v1\"\nmodel = \"qwen2.5:7b\"\n\n[[provider]]\nname = \"groq\"\nmodel = \"m\"\n\n# the fallback\n[mood]\nnight = \"x\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SetProvider([]byte(tt.old), local)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("SetProvider:\n%s\nwant:\n%s\ndiff:\n%s", got, tt.want, Diff([]byte(tt.want), got))
			}
			if _, err := toml.Decode(string(got), new(map[string]any)); err != nil {
				t.Errorf("the result is not TOML: %v", err)
			}
			again, _ := SetProvider(got, local)
			if string(again) != string(got) {
				t.Errorf("setting it again changes it:\n%s", Diff(got, again))
			}
		})
	}
	if _, err := SetProvider([]byte("[mood\nnight = 1\n"), local); err == nil || !strings.Contains(err.Error(), "leaves it alone") {
		t.Errorf("SetProvider of a broken file = %v, want it left alone", err)
	}
}

func TestDiff(t *testing.T) {
	if got := Diff([]byte("a\nb\nc\n"), []byte("a\nB\nc\n")); got != "@@ line 2 @@\n-b\n+B\n" {
		t.Errorf("Diff = %q", got)
	}
	if got := Diff([]byte("a\n"), []byte("a\n")); got != "" {
		t.Errorf("Diff of the same = %q, want none", got)
	}
}

func TestReadSecret(t *testing.T) {
	for _, tt := range []struct{ in, want, fails string }{
		{"123:abc\n", "123:abc", ""},
		{"  sk-1 \r\n", "sk-1", ""},
		{"\n", "", "is empty"},
		{"sk 1\n", "", "space or a control character"},
		{strings.Repeat("k", MaxSecretBytes+1), "", "over 4096 bytes"},
	} {
		got, err := ReadSecret(strings.NewReader(tt.in), "the key")
		if got != tt.want || (tt.fails == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.fails)) {
			t.Errorf("ReadSecret(%.20q) = %q, %v, want %q, %q", tt.in, got, err, tt.want, tt.fails)
		}
	}
}
