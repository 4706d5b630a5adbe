package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"shelldon/config"
	"shelldon/daemon/statedir"
	"shelldon/testhost"
	"shelldon/transports/chat/chattest"
)

// syncBuffer is an io.Writer that a test can read while the chat writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestUpFallsBackToTheLabelledDemoModel is `make run` without make: with
// no provider configured, `shelldon up --chat` starts the scripted demo
// model, says so and lists the phrases to try, a message typed at the
// prompt gets a real turn, and /help lists the phrases again. So it does
// with config/shelldon.example.toml copied as it is.
func TestUpFallsBackToTheLabelledDemoModel(t *testing.T) {
	example := filepath.Join(t.TempDir(), "shelldon.toml")
	if err := os.WriteFile(example, []byte(config.Example), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("no configuration", func(t *testing.T) { upOnTheDemoModel(t) })
	t.Run("the example copied", func(t *testing.T) { upOnTheDemoModel(t, "--config", example) })
}

func upOnTheDemoModel(t *testing.T, flags ...string) {
	goTool := testhost.Tool(t, "go", "golang (Go 1.26)")
	bin := t.TempDir()
	build := exec.Command(goTool, "build", "-o", filepath.Join(bin, demoModelBinary), "shelldon/cmd/shelldon-demo-model")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the demo model: %v\n%s", err, out)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	workerBinary(t) // `up` runs the worker from beside this test binary
	state := testhost.ShortDir(t)

	in, typed := io.Pipe()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), append([]string{"up", "--chat", "--state-dir", state}, flags...), in, &out, io.Discard)
	}()

	waitFor := func(what string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(out.String(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the terminal:\n%s", what, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("DEMO MODEL")
	waitFor("***   try: run ls — a read-only command")
	waitFor("***   try: make a tool that reverses text — ")
	waitFor("\n          (") // the mood's face: the chat has joined as a panel, so core is up
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "You said") {
		// A line typed before the transport has joined is refused with a
		// note; type again until one is taken.
		io.WriteString(typed, "hello there\n")
		if time.Now().After(deadline) {
			t.Fatalf("no reply in the terminal:\n%s", out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitFor("scripted demo model")
	io.WriteString(typed, "/help\n")
	waitFor("I'm running on the scripted demo model, which understands only these phrases")
	waitFor("try: remind me in 1m to stretch — a schedule")
	if n := strings.Count(out.String(), "try: write a haiku to poem.txt — "); n != 2 {
		t.Errorf("the phrases are listed %d times, want twice (the banner and /help):\n%s", n, out.String())
	}
	// The panel draws the face to <state-dir>/panel.png.
	png := filepath.Join(state, "panel.png")
	deadline = time.Now().Add(20 * time.Second)
	for {
		f, err := os.Open(png)
		if err == nil {
			cfg, _, err := image.DecodeConfig(f)
			f.Close()
			if err != nil || cfg.Width != 250 || cfg.Height != 122 {
				t.Fatalf("panel.png: %+v, %v; want a 250×122 image", cfg, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("up drew no face: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	typed.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("up = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("up did not stop when the input ended")
	}
	if _, err := os.Stat(filepath.Join(state, "shelldon.log")); err != nil {
		t.Errorf("up --chat wrote no log file: %v", err)
	}
}

// upInTheBackground starts `shelldon up --chat` on dir, as `make run`
// does but with a pipe for its terminal, and waits until core is ready;
// it returns the process and the demo model's address.
func upInTheBackground(t *testing.T, dir string) (*exec.Cmd, []byte) {
	t.Helper()
	demo := demoModelForOthers(t)
	t.Setenv("PATH", demo+string(os.PathListSeparator)+os.Getenv("PATH"))
	workerBinary(t) // `up` runs the worker from beside this test binary
	up := exec.Command(os.Args[0], "up", "--chat", "--state-dir", dir)
	up.Env = append(os.Environ(), "SHELLDON_TEST_MAIN=1")
	typed, err := up.StdinPipe() // held open: the chat runs until it closes
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		typed.Close()
		up.Process.Kill()
		up.Wait()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		log, _ := os.ReadFile(filepath.Join(dir, "shelldon.log"))
		if addr, err := os.ReadFile(filepath.Join(dir, "demo-model.addr")); err == nil && strings.Contains(string(log), "core ready") {
			return up, addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("up did not come up:\n%s", log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAKilledUpTakesItsDemoModel: `make run` killed (kill -9, an
// out-of-memory kill) leaves no demo model behind it, holding its port
// and memory for good.
func TestAKilledUpTakesItsDemoModel(t *testing.T) {
	up, addr := upInTheBackground(t, testhost.ShortDir(t))
	if err := up.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	up.Wait()
	models := strings.TrimSpace(string(addr)) + "/models"
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := http.Get(models)
		if err != nil {
			return // nothing answers there any more
		}
		res.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("the demo model of a killed up still answers at %s", models)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSecondUpOnTheSameStateIsRefused is a second `make run` in another
// terminal on the same ./var: it is refused at once, naming the first,
// before it starts a demo model of its own, prints the demo banner or
// writes to the first one's log; the first goes on with its demo model
// and address file as they were.
func TestSecondUpOnTheSameStateIsRefused(t *testing.T) {
	dir := testhost.ShortDir(t)
	first, addr := upInTheBackground(t, dir)
	addrFile := filepath.Join(dir, "demo-model.addr")
	logFile := filepath.Join(dir, "shelldon.log")

	for _, args := range [][]string{{"up", "--chat", "--state-dir", dir}, {"up", "--state-dir", dir}} {
		second := exec.Command(os.Args[0], args...)
		second.Env = append(os.Environ(), "SHELLDON_TEST_MAIN=1")
		var stderr bytes.Buffer
		second.Stderr = &stderr
		start := time.Now()
		err := second.Run()
		if took := time.Since(start); err == nil || took > 5*time.Second {
			t.Errorf("the second shelldon %q = %v after %v, want it refused at once", args, err, took)
		}
		want := fmt.Sprintf("another shelldon core holds the state directory (pid %d)", first.Process.Pid)
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the second shelldon %q said %q, want %q", args, stderr.String(), want)
		}
		if strings.Contains(stderr.String(), "DEMO MODEL") {
			t.Errorf("the second shelldon %q printed the demo banner before it failed:\n%s", args, stderr.String())
		}
	}
	if now, err := os.ReadFile(addrFile); err != nil || !bytes.Equal(now, addr) {
		t.Errorf("demo-model.addr after the second up = %q, %v; want the first's %q", now, err, addr)
	}
	res, err := http.Get(strings.TrimSpace(string(addr)) + "/models")
	if err != nil {
		t.Fatalf("the first up's demo model: %v", err)
	}
	res.Body.Close()
	if log, _ := os.ReadFile(logFile); strings.Count(string(log), "using the scripted demo model") != 1 {
		t.Errorf("shelldon.log tells of %d demo models, want the first's alone:\n%s", strings.Count(string(log), "using the scripted demo model"), log)
	}
}

// TestDemoBannerFitsATerminal: the demo banner, and the phrases as /help
// lists them under the terminal's indent of a reply's later lines (ten
// columns), fit a terminal of 80 columns, so that a first `make run`
// shows no phrase broken across lines.
func TestDemoBannerFitsATerminal(t *testing.T) {
	lines := strings.Split(demoBanner, "\n")
	for _, line := range strings.Split(demoHelp, "\n") {
		if strings.HasPrefix(line, "try: ") {
			lines = append(lines, strings.Repeat(" ", 10)+line)
		}
	}
	for _, line := range lines {
		if n := len([]rune(line)); n > helpWidth {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
}

// terminalUp is `shelldon up --chat` on a pseudo-terminal that is its
// controlling terminal, as make run's terminal is: Ctrl-C typed there is
// a SIGINT to its foreground process group.
type terminalUp struct {
	term   *chattest.Terminal
	state  string
	exited chan struct{}
	err    error // how up ended, once exited is closed
}

// upInATerminal starts `shelldon up --chat` on a fresh state directory,
// with demoDir (where its shelldon-demo-model is) first on $PATH.
func upInATerminal(t *testing.T, demoDir string) *terminalUp {
	t.Helper()
	workerBinary(t) // `up` runs the worker from beside this test binary
	u := &terminalUp{term: chattest.New(t), state: testhost.ShortDir(t), exited: make(chan struct{})}
	up := exec.Command(os.Args[0], "up", "--chat", "--state-dir", u.state)
	up.Env = append(os.Environ(), "SHELLDON_TEST_MAIN=1", "PATH="+demoDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	up.Stdin, up.Stdout, up.Stderr = u.term.Slave, u.term.Slave, u.term.Slave
	up.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { u.err = up.Wait(); close(u.exited) }()
	t.Cleanup(func() {
		up.Process.Kill()
		<-u.exited
	})
	u.term.Slave.Close() // up's now: the terminal closes when it exits
	u.term.WaitFor(t, "*** DEMO MODEL")
	return u
}

// waitExit waits for up to end after what the test did, cleanly.
func (u *terminalUp) waitExit(t *testing.T, after string) {
	t.Helper()
	select {
	case <-u.exited:
		if u.err != nil {
			t.Errorf("up after %s = %v, want a clean exit", after, u.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("up did not stop after %s:\n%s", after, u.term.Screen())
	}
}

// TestMakeRunInATerminal is `make run` as its owner lives it: `shelldon
// up --chat` in a pseudo-terminal of its own, the demo model it starts
// beside it, a real core, broker, worker and panel behind the chat. The
// owner types the banner's phrases: a write is asked about, a message and
// /help typed while it waits are what they are (the help saying nothing
// of buttons, which a terminal has none of), y approves it and the file
// is written; a note is remembered; /rules says how to grant one here;
// nothing reaches the terminal raw; Ctrl-D ends it all.
func TestMakeRunInATerminal(t *testing.T) {
	u := upInATerminal(t, demoModelForOthers(t))
	term, state := u.term, u.state
	term.WaitFor(t, "***   try: write a haiku to poem.txt — ")
	// A line typed before the chat has joined core is refused with a
	// note; type until one is taken: until the reply starts (the demo
	// model streams it, a word or so every DemoPace).
	deadline := time.Now().Add(20 * time.Second)
	for screen := term.Screen(); !strings.Contains(screen, "shelldon… ") && !strings.Contains(screen, "You said: “hello there”"); screen = term.Screen() {
		if time.Now().After(deadline) {
			t.Fatalf("no reply in the terminal:\n%s", term.Screen())
		}
		term.Line(t, "hello there")
		time.Sleep(300 * time.Millisecond)
	}
	term.WaitFor(t, "You said: “hello there”")

	term.Line(t, "write a haiku to poem.txt")
	term.WaitFor(t, "── shelldon asks to use write_file [")
	term.WaitUntil(t, "the approval prompt", func(string) bool { return strings.HasPrefix(term.LastLine(), "approve? [y/n") })

	term.Line(t, "tell me a long story")
	term.WaitFor(t, "You said: “tell me a long story”")
	before := len(term.Screen())
	term.Line(t, "/help")
	term.WaitUntil(t, "/help's phrases", func(screen string) bool {
		return strings.Contains(screen[before:], "only these phrases") && strings.Contains(screen[before:], "try: remember I like hazelnut coffee — ")
	})
	if help := term.Screen()[before:]; strings.Contains(strings.ToLower(help), "button") {
		t.Errorf("/help in the terminal speaks of buttons, which it has none of:\n%s", help)
	}
	term.WaitUntil(t, "the approval prompt again", func(string) bool { return strings.HasPrefix(term.LastLine(), "approve? [y/n") })

	term.Line(t, "y")
	term.WaitFor(t, "✅ Approved — running write_file")
	term.WaitFor(t, "Done: wrote 78 bytes to poem.txt")
	layout := statedir.Layout{Root: state}
	if poem, err := os.ReadFile(filepath.Join(layout.Workspace(), "poem.txt")); err != nil || !strings.Contains(string(poem), "beneath the moon") {
		t.Errorf("poem.txt after y = %q, %v; want the haiku", poem, err)
	}

	term.Line(t, "remember I like hazelnut coffee")
	term.WaitFor(t, "Noted! I'll remember: “I like hazelnut coffee”.")

	before = len(term.Screen())
	term.Line(t, "/rules")
	term.WaitFor(t, "No rules: everything that needs your approval asks.")
	term.WaitUntil(t, "the prompt after /rules", func(string) bool { return term.LastLine() == ">" })
	if rules := term.Screen()[before:]; strings.Contains(rules, "Tap") {
		t.Errorf("/rules in the terminal says to tap, which it cannot:\n%s", rules)
	}

	term.Type(t, "\x04")
	term.WaitFor(t, "bye")
	u.waitExit(t, "Ctrl-D")
	if notes, err := os.ReadFile(layout.MemoryTopic("notes")); err != nil || !strings.Contains(string(notes), "I like hazelnut coffee") {
		t.Errorf("memory/notes.md = %q, %v; want the note", notes, err)
	}
	if raw := term.Foreign(); len(raw) > 0 {
		t.Errorf("these reached the terminal raw: %q", raw)
	}
}

// TestCtrlCLetsTheTurnFinish: Ctrl-C in `make run` while a turn waits for
// the model stops the pet as systemctl stop does — the turn in flight is
// let finish, and its answer shown — for the demo model as for any: the
// terminal's Ctrl-C goes to `up`, not to the demo model beside it, which
// up stops itself once its turns are done.
func TestCtrlCLetsTheTurnFinish(t *testing.T) {
	demo := demoModelForOthers(t)
	// The demo model, as up finds it on $PATH, answers the first request
	// slowly: the turn is in flight when the owner presses Ctrl-C.
	slow := t.TempDir()
	script := filepath.Join(slow, "slow.json")
	if err := os.WriteFile(script, []byte(`[{"text": "the slow answer", "delay": "2s"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\nexec " + filepath.Join(demo, demoModelBinary) + " --script " + script + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(slow, demoModelBinary), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	u := upInATerminal(t, slow)
	term, state := u.term, u.state
	term.WaitFor(t, "\n          (") // the mood's face: the chat has joined core
	term.Line(t, "tell me slowly")
	deadline := time.Now().Add(20 * time.Second)
	for {
		log, _ := os.ReadFile(filepath.Join(state, "shelldon.log"))
		// The model has the turn's request: the worker is past its start.
		// (A Ctrl-C in the microseconds between a worker's fork and its
		// own process group reaches the worker too; the owner's terminal
		// sends SIGINT to its whole foreground group.)
		if strings.Contains(string(log), "request 1 arrived") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the model never had the turn's request:\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	term.Type(t, "\x03")
	term.WaitFor(t, "(Stopping: ")
	term.WaitFor(t, "shelldon: the slow answer")
	term.WaitFor(t, "bye")
	u.waitExit(t, "Ctrl-C")
	out, _, _ := runBinary(t, "turns", "--json", "--state-dir", state)
	if !strings.Contains(out, `"outcome":"ok"`) || !strings.Contains(out, `"preview":"tell me slowly"`) {
		t.Errorf("the turn in flight at Ctrl-C ended %s, want ok", out)
	}
}
