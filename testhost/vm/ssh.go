package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"shelldon/tailbuf"
)

// ErrNoCommand is returned by [VM.Exec] when it is given no command.
var ErrNoCommand = errors.New("no command")

// Exec runs argv as root in the guest, over ssh, and returns what it
// printed (stdout and stderr). Each word reaches the guest as it is: the
// remote shell sees them quoted.
func (v *VM) Exec(ctx context.Context, argv ...string) ([]byte, error) {
	var out bytes.Buffer
	if err := v.run(ctx, nil, &out, &out, argv); err != nil {
		return out.Bytes(), fmt.Errorf("in the test VM, %s: %w: %s", shellJoin(argv), err, out.Bytes())
	}
	return out.Bytes(), nil
}

// Must runs argv as [VM.Exec] does and returns its output, failing the
// test when it fails.
func (v *VM) Must(t testing.TB, argv ...string) string {
	t.Helper()
	out, err := v.Exec(context.Background(), argv...)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// ReadFile returns the content of the guest's file at path.
func (v *VM) ReadFile(ctx context.Context, path string) ([]byte, error) {
	var out, errOut bytes.Buffer
	if err := v.run(ctx, nil, &out, &errOut, []string{"cat", "--", path}); err != nil {
		return nil, fmt.Errorf("read %s in the test VM: %w: %s", path, err, errOut.Bytes())
	}
	return out.Bytes(), nil
}

// WriteFile writes data to the guest's file at path, creating or
// truncating it, and gives it mode's permission bits (also when it
// already existed).
func (v *VM) WriteFile(ctx context.Context, path string, data []byte, mode os.FileMode) error {
	var errOut bytes.Buffer
	// Created private, so the data is never readable under looser
	// permissions than asked for.
	script := `umask 077 && cat > "$1" && chmod "$2" "$1"`
	argv := []string{"sh", "-c", script, "sh", path, strconv.FormatUint(uint64(mode.Perm()), 8)}
	if err := v.run(ctx, bytes.NewReader(data), &errOut, &errOut, argv); err != nil {
		return fmt.Errorf("write %s in the test VM: %w: %s", path, err, errOut.Bytes())
	}
	return nil
}

func (v *VM) run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, argv []string) error {
	if len(argv) == 0 {
		return ErrNoCommand
	}
	cmd := exec.CommandContext(ctx, v.ssh, append(v.sshArgs("no"), shellJoin(argv))...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	// The master connection holds this command's pipes (ssh hands them
	// over): without a bound, a command cut off by its context would be
	// waited for as long as the master lives.
	cmd.WaitDelay = sshWaitDelay
	err := cmd.Run()
	// ssh exits 255 for its own failures; a command cut off by its
	// context may be one the guest never answered.
	var exitErr *exec.ExitError
	if (errors.As(err, &exitErr) && exitErr.ExitCode() == sshFailed) || (err != nil && ctx.Err() != nil) {
		v.noteUnreachable(err)
	}
	return err
}

// sshWaitDelay is how long a command cut off by its context may take to
// hand back its output.
const sshWaitDelay = 5 * time.Second

// sshFailed is ssh's exit status when it, not the remote command, failed.
const sshFailed = 255

// sshArgs reach the guest's root with the test's key, trusting whatever
// host key the fresh guest shows and asking nothing. Every command goes
// through the master connection when there is one (a new ssh handshake
// costs about a second under TCG) and connects on its own when not.
func (v *VM) sshArgs(controlMaster string) []string {
	return []string{"-F", "/dev/null", "-i", v.key, "-p", strconv.Itoa(v.SSHPort),
		"-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10",
		// A guest silent for a minute ends the connection, so that a
		// command on a guest that stopped fails rather than waits forever.
		"-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=6",
		"-o", "ControlMaster=" + controlMaster, "-o", "ControlPath=" + v.control,
		"root@127.0.0.1"}
}

// sshMaster is the ssh connection the test's commands share.
type sshMaster struct {
	cmd    *exec.Cmd
	stderr *tailbuf.Buffer
	done   chan struct{}
	err    error // how it ended, once done is closed
}

func (v *VM) startMaster() (*sshMaster, error) {
	cmd := exec.Command(v.ssh, append(v.sshArgs("yes"), "-N")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	m := &sshMaster{cmd: cmd, stderr: tailbuf.New(4 << 10), done: make(chan struct{})}
	cmd.Stderr = m.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the ssh master connection: %w", err)
	}
	go func() {
		m.err = cmd.Wait()
		close(m.done)
	}()
	return m, nil
}

// stop ends the master connection; a guest that powered off has usually
// ended it already.
func (m *sshMaster) stop() {
	if m == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	<-m.done
}

// describe says whether the master connection is still up, and how it
// ended when it is not.
func (m *sshMaster) describe() string {
	if m == nil {
		return "ssh master connection: never started\n"
	}
	select {
	case <-m.done:
		said, _ := m.stderr.Bytes()
		return fmt.Sprintf("ssh master connection: ended (%v): %q\n", m.err, said)
	default:
		return "ssh master connection: up\n"
	}
}

// shellJoin quotes each word for a POSIX shell — ssh hands the remote
// shell one string — so that no word is split, expanded or run.
func shellJoin(argv []string) string {
	quoted := make([]string, len(argv))
	for i, word := range argv {
		quoted[i] = "'" + strings.ReplaceAll(word, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}
