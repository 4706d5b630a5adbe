package sandbox_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"shelldon/sandbox"
)

// TestAProcessIsSpokenToOverItsStdio: a process in its container answers
// what is written to its stdin on its stdout, its stderr kept apart; it
// ends when its stdin does, and Stop ends one that would not.
func TestAProcessIsSpokenToOverItsStdio(t *testing.T) {
	sb := newSandbox(t)
	ws := workspace(t, 0, map[string]string{"a.txt": "hello"})
	p, err := sb.Start(context.Background(), sandbox.Spec{Argv: sh("echo starting >&2; while read -r line; do echo \"got $line\"; done"), Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(p.Stdout)
	for _, line := range []string{"one", "two"} {
		if _, err := io.WriteString(p.Stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
		got, err := out.ReadString('\n')
		if err != nil || got != "got "+line+"\n" {
			t.Fatalf("read %q, %v; want %q", got, err, "got "+line)
		}
	}
	p.Stdin.Close()
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the process did not end with its stdin")
	}
	res, err := p.Wait()
	if err != nil || res.ExitCode != 0 || !strings.Contains(string(res.Output), "starting") {
		t.Errorf("Wait = %+v (output %q), %v; want exit 0 with its stderr", res, res.Output, err)
	}
	if rest, _ := io.ReadAll(out); len(rest) != 0 {
		t.Errorf("stdout after the end: %q", rest)
	}
	p.Stdout.Close()

	p, err = sb.Start(context.Background(), sandbox.Spec{Argv: []string{"/bin/sleep", "600"}, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { _, err := p.Stop(); stopped <- err }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Stop = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Stop did not end the process")
	}
	if _, err := io.ReadAll(p.Stdout); err != nil {
		t.Errorf("stdout of a stopped process: %v", err)
	}
	if _, err := io.WriteString(p.Stdin, "late\n"); err == nil {
		t.Error("a write to a stopped process's stdin succeeded")
	}
}

// TestAProcessHasNoCapturedView: what a process writes is never a change
// set the owner sees, so it cannot ask for one.
func TestAProcessHasNoCapturedView(t *testing.T) {
	sb := newSandbox(t)
	_, err := sb.Start(context.Background(), sandbox.Spec{Argv: []string{"/bin/true"}, Workspace: workspace(t, 0, nil), View: sandbox.Captured})
	if !errors.Is(err, sandbox.ErrBadSpec) {
		t.Errorf("Start(Captured) = %v, want ErrBadSpec", err)
	}
}
