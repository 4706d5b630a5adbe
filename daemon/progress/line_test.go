package progress

import (
	"strings"
	"testing"
	"unicode/utf8"

	"shelldon/contracts"
)

func TestProgressLine(t *testing.T) {
	long := strings.Repeat("a", 10000)
	tests := []struct{ doing, outcome, want string }{
		{"reading notes.md", "", "reading notes.md…"},
		{"running `pytest -q`", "12 passed", "running `pytest -q`… 12 passed"},
		{"running `ls\x1b[2J`", "", "running `ls\\x1b[2J`…"},
		{"running `a\nb`", "exit 1", "running `a\\nb`… exit 1"},
		{"", "", "working…"},
	}
	for _, tt := range tests {
		if got := line(tt.doing, tt.outcome); got != tt.want {
			t.Errorf("line(%q, %q) = %q, want %q", tt.doing, tt.outcome, got, tt.want)
		}
	}
	for _, outcome := range []string{"", "exit 1", long} {
		got := line("fetching https://example.com/"+long, outcome)
		if n := utf8.RuneCountInString(got); n > contracts.MaxProgressLine {
			t.Errorf("line(long, %.10q) has %d characters, want at most %d", outcome, n, contracts.MaxProgressLine)
		}
		if outcome == "exit 1" && !strings.HasSuffix(got, "… exit 1") {
			t.Errorf("line(long, %q) = %q, want the outcome kept", outcome, got)
		}
	}
}

func TestRunOutcome(t *testing.T) {
	tests := []struct{ described, want string }{
		{"exit 0\n....\n12 passed in 0.03s", "12 passed"},
		{"exit 1\n..F.\nFAILED test_a.py::test_x\n1 failed, 3 passed in 0.05s", "1 failed, 3 passed"},
		{"exit 1\n========== 1 failed, 2 passed, 1 warning in 1.20s ==========", "1 failed, 2 passed, 1 warning"},
		{"exit 5\n\nno tests ran in 0.01s", "no tests ran"},
		{"exit 0\nnotes.md\n", "done"},
		{"exit 2\nls: cannot access 'x'", "exit 2"},
		{"exit 1, its disk full\n(no output)", "exit 1"},
		{"killed: it ran past 30s\n(no output)", "killed: it ran past 30s"},
		{"error: the sandbox is missing", "failed"},
		{"exit 0\nsaid 12 passed in 3s today", "done"},
	}
	for _, tt := range tests {
		if got := runOutcome(tt.described); got != tt.want {
			t.Errorf("runOutcome(%q) = %q, want %q", tt.described, got, tt.want)
		}
	}
}
