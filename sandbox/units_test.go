package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"shelldon/sandbox"
)

// TestInSystemdUnits: what only the systemd-unit backend does (the
// suite, TestBackends, holds it to the rest): the unit holds every limit,
// and a turn's runs are units numbered after it.
func TestInSystemdUnits(t *testing.T) {
	sb, host := inSystemdUnits(t)
	ctx := context.Background()
	ws := filepath.Join(host.Dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("the unit holds the limits", func(t *testing.T) {
		res := run(t, sb, sandbox.Spec{Argv: []string{"true"}, Workspace: ws})
		for _, limit := range []string{"tasks", "cpu", "wall"} {
			if !slices.Contains(res.Enforced, limit) {
				t.Errorf("Enforced = %v, want %s held by the unit", res.Enforced, limit)
			}
		}
		// systemd takes MemoryMax whether or not it can hold it: a memory
		// limit is claimed only where the unit's memory was measured.
		if measured := res.MemoryPeak > 0; slices.Contains(res.Enforced, "memory") != measured {
			t.Errorf("Enforced = %v with a memory peak of %d: memory claimed where it was not measured, or not claimed where it was", res.Enforced, res.MemoryPeak)
		}
	})
	t.Run("a turn's runs are numbered units", func(t *testing.T) {
		for range 2 {
			run(t, sb, sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Turn: "feedbeef"})
		}
		out, err := host.Exec(ctx, "journalctl", "--no-pager", "-o", "cat", "-u", "shelldon-run@feedbeef-2.service")
		if err != nil || !strings.Contains(string(out), "shelldon sandboxed command") {
			t.Errorf("journal of shelldon-run@feedbeef-2.service = %v\n%s\nwant systemd's lines about the second run", err, out)
		}
		if _, err := sb.Run(ctx, sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Turn: "not a unit name"}); err == nil {
			t.Error("a turn that cannot name a unit ran")
		}
	})
}
