package approved

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/sandbox"
)

// fullDisk is a sandbox whose every run fills its disk, leaving a change
// set that creates cut.txt.
type fullDisk struct{ t *testing.T }

func (f fullDisk) Run(_ context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	upper := filepath.Join(f.t.TempDir(), "upper")
	if err := os.MkdirAll(upper, 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(upper, "cut.txt"), []byte("the first half"), 0o644); err != nil {
		f.t.Fatal(err)
	}
	cs, err := sandbox.OpenKept(upper, spec.Workspace)
	if err != nil {
		f.t.Fatal(err)
	}
	return sandbox.Result{ExitCode: 1, DiskFull: true, Output: []byte("No space left on device\n"), Changes: cs}, nil
}

// TestTheChangesOfAFullDiskAreDropped: what a command wrote when its disk
// filled may be cut short, so none of it is applied, and the model is told
// why and what the owner can change.
func TestTheChangesOfAFullDiskAreDropped(t *testing.T) {
	ws := t.TempDir()
	r := &Runner{Workspace: ws, Kept: t.TempDir(), Sandbox: fullDisk{t}, Log: slog.New(slog.DiscardHandler)}
	req := approval.Request{Key: "t1", Call: &approval.CallPayload{Call: contracts.ToolCall{Name: "run_shell"}}}
	res := r.command(context.Background(), req, []string{"sh", "-c", "dd if=/dev/zero of=big"}, false)
	if !strings.Contains(res.Answer, "none applied") || !strings.Contains(res.Answer, "sandbox.disk") || res.Applied != nil || res.Kept != nil {
		t.Errorf("command = %+v; want its changes dropped, saying why", res)
	}
	if _, err := os.Stat(filepath.Join(ws, "cut.txt")); err == nil {
		t.Error("the cut-short file was applied")
	}
}
