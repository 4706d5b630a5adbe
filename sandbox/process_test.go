package sandbox_test

import (
	"context"
	"errors"
	"testing"

	"shelldon/sandbox"
)

// TestAProcessHasNoCapturedView: what a process writes is never a change
// set the owner sees, so it cannot ask for one.
func TestAProcessHasNoCapturedView(t *testing.T) {
	sb := newSandbox(t)
	_, err := sb.Start(context.Background(), sandbox.Spec{Argv: []string{"/bin/true"}, Workspace: workspace(t, 0, nil), View: sandbox.Captured})
	if !errors.Is(err, sandbox.ErrBadSpec) {
		t.Errorf("Start(Captured) = %v, want ErrBadSpec", err)
	}
}
