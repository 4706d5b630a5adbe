package vm

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestShellJoinKeepsWords runs the joined words through a real shell,
// which must hand printf each word unchanged.
func TestShellJoinKeepsWords(t *testing.T) {
	tests := [][]string{
		{"plain"},
		{"two words", "x"},
		{"it's", `"double"`, `back\slash`},
		{"$HOME", "`id`", "$(id)", "*", "~"},
		{"a; rm -rf /", "b && c", "d | e", "f > g"},
		{"", "empty before"},
		{"new\nline", "tab\there"},
		{"'", "''", `'\''`},
	}
	for _, argv := range tests {
		t.Run(strings.Join(argv, " "), func(t *testing.T) {
			script := `printf '%s\0' ` + shellJoin(argv)
			out, err := exec.Command("sh", "-c", script).Output()
			if err != nil {
				t.Fatalf("sh -c %q: %v", script, err)
			}
			got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
			if !slices.Equal(got, argv) {
				t.Errorf("shellJoin(%q) reaches the shell as %q", argv, got)
			}
		})
	}
}
