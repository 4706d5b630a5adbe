package sandbox_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
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

// TestTalkCapturesWhatTheCommandWrote: a command spoken to over its stdin
// and stdout in a Captured view answers, ends when its stdin closes, and
// what it wrote to the workspace comes back as a change set, the
// workspace untouched until it is applied.
func TestTalkCapturesWhatTheCommandWrote(t *testing.T) {
	sb := newSandbox(t)
	ws := workspace(t, 0, nil)
	var heard string
	res, err := sb.Talk(context.Background(), sandbox.Spec{
		Argv:      []string{"sh", "-c", `read line && echo "$line" > /workspace/said.txt && echo "got $line" && cat >/dev/null`},
		Workspace: ws, View: sandbox.Captured,
	}, func(stdin io.WriteCloser, stdout io.ReadCloser) error {
		if _, err := io.WriteString(stdin, "hello\n"); err != nil {
			return err
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		heard = line
		return err
	})
	if err != nil {
		t.Fatalf("Talk = %v", err)
	}
	defer res.Changes.Discard()
	if heard != "got hello\n" || res.ExitCode != 0 {
		t.Errorf("the command answered %q and exited %d, want %q and 0 (output %q)", heard, res.ExitCode, "got hello\n", res.Output)
	}
	if res.Changes == nil || len(res.Changes.Changes) != 1 || res.Changes.Changes[0].Path != "said.txt" {
		t.Fatalf("the change set is %+v, want said.txt alone", res.Changes)
	}
	if _, err := os.Stat(filepath.Join(ws, "said.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("said.txt reached the workspace before the change set was applied: %v", err)
	}
}
