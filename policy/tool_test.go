package policy

import (
	"errors"
	"slices"
	"testing"

	"shelldon/contracts"
)

// TestTool: each built-in tool's calls get their tier, note and program
// from policy alone, given the parsed arguments and the facts the caller
// looked up; a call that may never run is refused with its rule's error.
func TestTool(t *testing.T) {
	const ws = "/home/pet/workspace"
	for _, tt := range []struct {
		name    string
		tool    string
		args    ToolArgs
		want    ToolVerdict
		wantErr error
	}{
		{"time", "get_time", ToolArgs{}, ToolVerdict{Tier: contracts.TierFree}, nil},
		{"read", "read_file", ToolArgs{Values: map[string]string{"path": "notes.md"}}, ToolVerdict{Tier: contracts.TierFree}, nil},
		{"list", "list_dir", ToolArgs{}, ToolVerdict{Tier: contracts.TierFree}, nil},
		{"eval", "python_eval", ToolArgs{Values: map[string]string{"expression": "1+1"}}, ToolVerdict{Tier: contracts.TierFree}, nil},
		{"read-only shell", "run_shell", ToolArgs{Values: map[string]string{"command": "ls -la"}, Workspace: ws},
			ToolVerdict{Tier: contracts.TierFree, Sandboxed: true, Argv: []string{"/bin/sh", "-c", "ls -la"}}, nil},
		{"deleting shell", "run_shell", ToolArgs{Values: map[string]string{"command": "rm notes.md"}, Workspace: ws},
			ToolVerdict{Tier: contracts.TierRisky, Note: Classify("rm notes.md", ws).Note, Argv: []string{"/bin/sh", "-c", "rm notes.md"}}, nil},
		{"networked shell", "run_shell", ToolArgs{Values: map[string]string{"command": "curl https://example.com"}, Workspace: ws},
			ToolVerdict{Tier: contracts.TierRisky, Note: Classify("curl https://example.com", ws).Note, Network: true, Argv: []string{"/bin/sh", "-c", "curl https://example.com"}}, nil},
		{"new file", "write_file", ToolArgs{Values: map[string]string{"path": "a.txt", "content": "hello"}},
			ToolVerdict{Tier: contracts.TierRisky, Note: "writes 5 bytes to a.txt (creates it)"}, nil},
		{"existing file", "write_file", ToolArgs{Values: map[string]string{"path": "a.txt", "content": "hello"}, Exists: true},
			ToolVerdict{Tier: contracts.TierRisky, Note: "writes 5 bytes to a.txt (replaces it)"}, nil},
		{"edit", "edit_file", ToolArgs{Values: map[string]string{"path": "a.txt", "old": "x", "new": "y"}},
			ToolVerdict{Tier: contracts.TierRisky, Note: "replaces one piece of a.txt"}, nil},
		{"fetch", "http_get", ToolArgs{Values: map[string]string{"url": "https://example.com/a b"}},
			ToolVerdict{Tier: contracts.TierRisky, Note: "fetches https://example.com/a%20b", Network: true, URL: "https://example.com/a%20b"}, nil},
		{"fetch loopback", "http_get", ToolArgs{Values: map[string]string{"url": "http://127.0.0.1/"}}, ToolVerdict{}, ErrForbiddenAddress},
		{"fetch file", "http_get", ToolArgs{Values: map[string]string{"url": "file:///etc/passwd"}}, ToolVerdict{}, ErrForbiddenURL},
		{"git status", "git", ToolArgs{Values: map[string]string{"args": "status --short"}},
			ToolVerdict{Tier: contracts.TierRisky, Note: "shows the state of the working tree", Argv: []string{"git", "status", "--short"}}, nil},
		{"git config", "git", ToolArgs{Values: map[string]string{"args": "config core.hooksPath x"}}, ToolVerdict{}, ErrGitRefused},
		{"self-coded", "weather", ToolArgs{SelfCoded: true}, ToolVerdict{Tier: contracts.TierFree, Sandboxed: true}, nil},
		{"unknown", "format_disk", ToolArgs{}, ToolVerdict{Tier: contracts.TierRisky}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Tool(tt.tool, tt.args)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Tool(%s) = %+v, %v, want %v", tt.tool, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Tool(%s) = %v", tt.tool, err)
			}
			if got.Tier != tt.want.Tier || got.Note != tt.want.Note || got.Network != tt.want.Network ||
				got.Sandboxed != tt.want.Sandboxed || !slices.Equal(got.Argv, tt.want.Argv) || got.URL != tt.want.URL {
				t.Errorf("Tool(%s) = %+v, want %+v", tt.tool, got, tt.want)
			}
		})
	}
}

// TestToolTier: the tier a tool's definition shows the model is policy's;
// a tool policy has no decision for asks.
func TestToolTier(t *testing.T) {
	for name, want := range map[string]contracts.Tier{
		"get_time": contracts.TierFree, "read_file": contracts.TierFree, "list_dir": contracts.TierFree, "python_eval": contracts.TierFree,
		"run_shell": contracts.TierRisky, "write_file": contracts.TierRisky, "edit_file": contracts.TierRisky,
		"http_get": contracts.TierRisky, "git": contracts.TierRisky, "something_new": contracts.TierRisky,
	} {
		if got := ToolTier(name, false); got != want {
			t.Errorf("ToolTier(%s) = %s, want %s", name, got, want)
		}
	}
	if got := ToolTier("something_new", true); got != contracts.TierFree {
		t.Errorf("ToolTier of a self-coded tool = %s, want FREE", got)
	}
}
