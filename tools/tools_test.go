package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shelldon/beneath"
	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/policy"
)

func testEnv(t *testing.T) Env {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	vault := filepath.Join(ws, "vault")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{ws, vault, outside, filepath.Join(ws, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(ws, "notes.txt"):      "hello\n",
		filepath.Join(ws, ".env"):           "SECRET=1",
		filepath.Join(ws, "server.pem"):     "key",
		filepath.Join(ws, "bin.dat"):        "\xff\xfe\x00\x01",
		filepath.Join(ws, "big.txt"):        strings.Repeat("a", maxReadBytes+100),
		filepath.Join(vault, "token"):       "secret",
		filepath.Join(outside, "diary.txt"): "outside",
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "diary.txt"), filepath.Join(ws, "escape.txt")); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 14, 9, 26, 53, 0, time.Local)
	return Env{Workspace: ws, Vault: vault, Clock: clock.NewFake(start), Evaluator: testEvaluator}
}

func runLocal(t *testing.T, env Env, name, args string) (string, error) {
	t.Helper()
	tool, ok := Builtins(env).Lookup(name)
	if !ok {
		t.Fatalf("Lookup(%q) failed", name)
	}
	if _, err := tool.Check(args); err != nil {
		return "", err
	}
	return tool.(Local).Run(context.Background(), args)
}

func TestLocalTools(t *testing.T) {
	env := testEnv(t)
	tests := []struct {
		name, tool, args string
		want             string // substring of the output
		wantErr          error
	}{
		{"time", "get_time", `{}`, "2026-03-14T09:26:53", nil},
		{"time weekday", "get_time", ``, "Saturday", nil},
		{"read", "read_file", `{"path":"notes.txt"}`, "hello\n", nil},
		{"read big cut", "read_file", `{"path":"big.txt"}`, "[cut: showed the first 65536 bytes of 65636]", nil},
		{"read binary", "read_file", `{"path":"bin.dat"}`, "binary file (4 bytes)", nil},
		{"read dir", "read_file", `{"path":"sub"}`, "", os.ErrInvalid},
		{"read missing", "read_file", `{"path":"nope.txt"}`, "", os.ErrNotExist},
		{"read outside", "read_file", `{"path":"../outside/diary.txt"}`, "", beneath.ErrOutsideWorkspace},
		{"read absolute", "read_file", `{"path":"/etc/passwd"}`, "", beneath.ErrOutsideWorkspace},
		{"read symlink escape", "read_file", `{"path":"escape.txt"}`, "", beneath.ErrOutsideWorkspace},
		{"read vault", "read_file", `{"path":"vault/token"}`, "", policy.ErrDenied},
		{"read env", "read_file", `{"path":".env"}`, "", policy.ErrDenied},
		{"read env upper", "read_file", `{"path":".ENV"}`, "", policy.ErrDenied},
		{"list root", "list_dir", `{}`, "big.bin.dat\n", nil},
		{"list hidden", "list_dir", `{"path":""}`, "(2 entries hidden", nil},
		{"list dirs slash", "list_dir", `{"path":""}`, "sub/\n", nil},
		{"list outside", "list_dir", `{"path":".."}`, "", beneath.ErrOutsideWorkspace},
		{"list vault", "list_dir", `{"path":"vault"}`, "", policy.ErrDenied},
	}
	tests[13].want = "big.txt\nbin.dat\n"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runLocal(t, env, tt.tool, tt.args)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) && !(tt.wantErr == os.ErrInvalid && err != nil) {
					t.Fatalf("%s(%s) error = %v, want %v", tt.tool, tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil || !strings.Contains(got, tt.want) {
				t.Fatalf("%s(%s) = %q, %v; want it to contain %q", tt.tool, tt.args, got, err, tt.want)
			}
		})
	}
}

func TestListDirCap(t *testing.T) {
	env := testEnv(t)
	dir := filepath.Join(env.Workspace, "many")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range maxListEntries + 5 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := runLocal(t, env, "list_dir", `{"path":"many"}`)
	if err != nil || !strings.Contains(got, "[cut: showed 500 of 505 entries]") {
		t.Fatalf("list_dir(many) = %q, %v; want a cut note", got[max(0, len(got)-100):], err)
	}
}

func TestBadArgs(t *testing.T) {
	env := testEnv(t)
	huge := `{"path":"` + strings.Repeat("a", maxPathBytes+1) + `"}`
	cases := map[string][]string{
		"get_time":    {`{"x":1}`, `[]`, `"s"`, `{} {}`},
		"read_file":   {`{}`, `{"path":1}`, `{"path":"a","x":"b"}`, `[1]`, `null`, huge, `{"path":null}`},
		"list_dir":    {`{"path":true}`, `{"dir":"a"}`, `5`, huge},
		"python_eval": {`{}`, `{"expression":2}`, `{"code":"1"}`, `"1+1"`, `{"expression":"` + strings.Repeat("1", maxExpressionBytes+1) + `"}`, `{"expression":"x ="}`},
		"run_shell":   {`{}`, `{"command":["ls"]}`, `{"command":"ls","cwd":"/"}`, `ls`},
		"write_file":  {`{"path":"a"}`, `{"path":"a","content":5}`, `{"content":"x"}`, `{"path":"a","content":"` + strings.Repeat("x", maxWriteBytes+1) + `"}`, `{"path":"a","content":"x","mode":"0777"}`},
		"edit_file":   {`{"path":"notes.txt","old":"a"}`, `{"path":"notes.txt","old":"","new":"b"}`, `{"path":"notes.txt","old":1,"new":"b"}`, `[]`},
		"http_get":    {`{}`, `{"url":5}`, `{"url":"http://x","method":"POST"}`},
		"git":         {`{}`, `{"args":["status"]}`, `{"args":"status","dir":"x"}`, `{"args":"` + strings.Repeat("a", 5000) + `"}`},
	}
	registry := Builtins(env)
	for name, argsList := range cases {
		tool, ok := registry.Lookup(name)
		if !ok {
			t.Fatalf("Lookup(%q) failed", name)
		}
		for _, args := range argsList {
			t.Run(name, func(t *testing.T) {
				if _, err := tool.Check(args); !errors.Is(err, ErrBadArgs) {
					t.Errorf("%s.Check(%.60q) error = %v, want ErrBadArgs", name, args, err)
				}
			})
		}
	}
	if _, err := parseArgs(strings.Repeat(" ", maxArgsBytes+1)); !errors.Is(err, ErrBadArgs) {
		t.Errorf("parseArgs(huge) error = %v, want ErrBadArgs", err)
	}
}

func TestCheckTiers(t *testing.T) {
	env := testEnv(t)
	tests := []struct {
		name, tool, args string
		want             Checked
		noteHas          string
		wantErr          error
	}{
		{"safe shell", "run_shell", `{"command":"ls -la | grep txt"}`, Checked{Tier: contracts.TierFree, Sandboxed: true}, "", nil},
		{"risky shell", "run_shell", `{"command":"rm -rf notes.txt"}`, Checked{Tier: contracts.TierRisky}, "rm", nil},
		{"network shell", "run_shell", `{"command":"curl https://example.com"}`, Checked{Tier: contracts.TierRisky, Network: true}, "curl", nil},
		{"write new", "write_file", `{"path":"new/a.txt","content":"abc"}`, Checked{Tier: contracts.TierRisky}, "writes 3 bytes to new/a.txt (creates it)", nil},
		{"write replace", "write_file", `{"path":"notes.txt","content":""}`, Checked{Tier: contracts.TierRisky}, "writes 0 bytes to notes.txt (replaces it)", nil},
		{"write env", "write_file", `{"path":"prod.env","content":"x"}`, Checked{}, "", policy.ErrDenied},
		{"write outside", "write_file", `{"path":"../x","content":"x"}`, Checked{}, "", beneath.ErrOutsideWorkspace},
		{"write symlink", "write_file", `{"path":"escape.txt","content":"x"}`, Checked{}, "", beneath.ErrOutsideWorkspace},
		{"edit", "edit_file", `{"path":"notes.txt","old":"hello","new":"bye"}`, Checked{Tier: contracts.TierRisky}, "replaces one piece of notes.txt", nil},
		{"edit vault", "edit_file", `{"path":"vault/token","old":"s","new":"t"}`, Checked{}, "", policy.ErrDenied},
		{"http", "http_get", `{"url":"https://example.com/a"}`, Checked{Tier: contracts.TierRisky, Network: true}, "fetches https://example.com/a", nil},
		{"http creds", "http_get", `{"url":"https://u:p@example.com/"}`, Checked{}, "", policy.ErrForbiddenURL},
		{"http file", "http_get", `{"url":"file:///etc/passwd"}`, Checked{}, "", policy.ErrForbiddenURL},
		{"git status", "git", `{"args":"status --short"}`, Checked{Tier: contracts.TierRisky}, "", nil},
		{"git push", "git", `{"args":"git push origin main"}`, Checked{Tier: contracts.TierRisky, Network: true}, "", nil},
		{"git config", "git", `{"args":"config core.sshCommand x"}`, Checked{}, "", policy.ErrGitRefused},
		{"git -c", "git", `{"args":"-c core.pager=x log"}`, Checked{}, "", policy.ErrGitRefused},
	}
	registry := Builtins(env)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, _ := registry.Lookup(tt.tool)
			got, err := tool.Check(tt.args)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("%s.Check(%s) error = %v, want %v", tt.tool, tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s.Check(%s) error = %v", tt.tool, tt.args, err)
			}
			if got.Tier != tt.want.Tier || got.Sandboxed != tt.want.Sandboxed || got.Network != tt.want.Network {
				t.Errorf("%s.Check(%s) = %+v, want %+v", tt.tool, tt.args, got, tt.want)
			}
			if !strings.Contains(got.Note, tt.noteHas) || (got.Tier == contracts.TierRisky) == (got.Note == "") {
				t.Errorf("%s.Check(%s).Note = %q, want it to contain %q", tt.tool, tt.args, got.Note, tt.noteHas)
			}
		})
	}
}

func TestApplyEdit(t *testing.T) {
	tests := []struct {
		content, old, new, want string
		wantErr                 string
	}{
		{"a b c", "b", "X", "a X c", ""},
		{"a b c", "z", "X", "", "occurs 0 times"},
		{"a b b", "b", "X", "", "occurs 2 times"},
		{"abc", "", "X", "", "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.old, func(t *testing.T) {
			got, err := ApplyEdit(tt.content, tt.old, tt.new)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrEditNotUnique) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ApplyEdit(%q, %q) error = %v, want %q", tt.content, tt.old, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ApplyEdit(%q, %q, %q) = %q, %v; want %q", tt.content, tt.old, tt.new, got, err, tt.want)
			}
		})
	}
}

func TestDefinitions(t *testing.T) {
	defs := Builtins(testEnv(t)).Definitions()
	want := []string{"get_time", "read_file", "list_dir", "python_eval", "run_shell", "write_file", "edit_file", "http_get", "git"}
	if len(defs) != len(want) {
		t.Fatalf("Definitions() has %d tools, want %d", len(defs), len(want))
	}
	for i, d := range defs {
		if d.Name != want[i] || d.Description == "" || d.ParamsSchema["type"] != "object" || d.ParamsSchema["additionalProperties"] != false {
			t.Errorf("Definitions()[%d] = %+v, want %s with an object schema", i, d, want[i])
		}
		if _, err := json.Marshal(d.ParamsSchema); err != nil {
			t.Errorf("schema of %s: %v", d.Name, err)
		}
	}
}

func TestCheckSaysWhatTheCallDoes(t *testing.T) {
	registry := Builtins(testEnv(t)).WithSelfCoded([]contracts.ToolDefinition{{Name: "reverse", Tier: contracts.TierFree}})
	tests := []struct{ tool, args, want string }{
		{"read_file", `{"path":"notes.txt"}`, "reading notes.txt"},
		{"list_dir", `{"path":"."}`, "listing ."},
		{"get_time", `{}`, "checking the time"},
		{"python_eval", `{"expression":"1+1"}`, "working something out in Python"},
		{"run_shell", `{"command":"pytest -q"}`, "running `pytest -q`"},
		{"run_shell", `{"command":"rm notes.txt"}`, "running `rm notes.txt`"},
		{"write_file", `{"path":"poem.txt","content":"moon"}`, "writing poem.txt"},
		{"edit_file", `{"path":"notes.txt","old":"hello","new":"bye"}`, "editing notes.txt"},
		{"http_get", `{"url":"https://example.com/a"}`, "fetching https://example.com/a"},
		{"git", `{"args":"git status --short"}`, "running `git status --short`"},
		{"reverse", `{"text":"abc"}`, "running my tool reverse"},
	}
	for _, tt := range tests {
		tool, _ := registry.Lookup(tt.tool)
		got, err := tool.Check(tt.args)
		if err != nil || got.Doing != tt.want {
			t.Errorf("%s.Check(%s).Doing = %q (err %v), want %q", tt.tool, tt.args, got.Doing, err, tt.want)
		}
	}
}
