package main

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"shelldon/bus"
	"shelldon/config"
	"shelldon/contracts"
	"shelldon/demomodel"
)

func serve(t testing.TB, model *demomodel.Server) string {
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// startDaemon runs `shelldon daemon` as its own process, as systemd would.
func startDaemon(t testing.TB, p *pet) *exec.Cmd {
	t.Helper()
	return startProcess(t, os.Args[0], "daemon", "--config", writeConfig(t, p))
}

// writeConfig writes the pet's configuration as a TOML file, for a
// daemon or broker in a process of its own.
func writeConfig(t testing.TB, p *pet) string {
	t.Helper()
	return writeTestConfig(t, p.cfg)
}

// writeTestConfig writes cfg as a TOML file in a directory removed at
// cleanup, and returns its path.
func writeTestConfig(t testing.TB, cfg config.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shelldon.toml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := toml.NewEncoder(f).Encode(cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCoreRestartWhileAWorkerRuns kills core mid-turn, as a crash would,
// and starts a new one on the same state: the old turn's result must never
// reach the owner, the old turn is recorded as interrupted, the new core
// tells the owner and answers the old turn's message itself, then serves
// the next. The broker and the transport rejoin by themselves.
func TestCoreRestartWhileAWorkerRuns(t *testing.T) {
	model := demomodel.New(
		demomodel.Step{Text: "the old turn's answer", Delay: 2 * time.Second},
		demomodel.Step{Text: "the slow question, answered again"},
		demomodel.Step{Text: "the new core's answer"},
	)
	p := newPet(t, model)
	p.stopCore() // hand the bus over to a core in its own process

	first := startDaemon(t, p)
	p.say("a slow question")
	p.waitRequests(1)
	running := p.turns()
	if len(running) != 1 || !running[0].Ended.IsZero() {
		t.Fatalf("turns = %+v, want one running", running)
	}
	oldTurn, oldWorker := running[0].ID, running[0].WorkerPID
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()

	startDaemon(t, p)
	// A worker that claims the old turn is refused by the new core.
	_, err := bus.Dial(context.Background(), p.cfg.Socket, contracts.Hello{Role: contracts.RoleWorker, Turn: oldTurn}, 0)
	for i := 0; err != nil && !errors.Is(err, bus.ErrRefused) && i < 200; i++ {
		time.Sleep(20 * time.Millisecond) // the new core is still binding its socket
		_, err = bus.Dial(context.Background(), p.cfg.Socket, contracts.Hello{Role: contracts.RoleWorker, Turn: oldTurn}, 0)
	}
	if !errors.Is(err, bus.ErrRefused) {
		t.Fatalf("joining as the old turn's worker: err = %v, want refused", err)
	}

	if r := p.reply(15 * time.Second); !strings.Contains(r.Text, "I was restarted before I could answer “a slow question”") {
		t.Fatalf("first word of the new core = %+v, want that it was restarted before it could answer", r)
	}
	if r := p.reply(15 * time.Second); r.Text != "the slow question, answered again" {
		t.Fatalf("reply = %+v, want the new core's answer to the old turn's message", r)
	}
	p.say("are you back?")
	if r := p.reply(15 * time.Second); r.Text != "the new core's answer" {
		t.Fatalf("reply = %+v, want the new core's answer", r)
	}
	p.noReply(2500 * time.Millisecond) // past the old turn's model delay
	turns := p.waitTurns(3)
	var old string
	for _, tr := range turns {
		if tr.ID == oldTurn {
			old = tr.Outcome
		}
	}
	if old != "interrupted" {
		t.Errorf("old turn outcome = %q, want interrupted", old)
	}
	if alive(oldWorker) {
		t.Errorf("the old worker (pid %d) outlived its core", oldWorker)
	}
}

// alive reports whether pid is a running process (a zombie is not).
func alive(pid int) bool {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}
