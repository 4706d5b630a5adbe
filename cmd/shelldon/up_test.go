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
	"testing"
	"time"

	"shelldon/config"
	"shelldon/testhost"
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

// TestSecondUpOnTheSameStateIsRefused is a second `make run` in another
// terminal on the same ./var: it is refused at once, naming the first,
// before it starts a demo model of its own, prints the demo banner or
// writes to the first one's log; the first goes on with its demo model
// and address file as they were.
func TestSecondUpOnTheSameStateIsRefused(t *testing.T) {
	demo := demoModelForOthers(t)
	t.Setenv("PATH", demo+string(os.PathListSeparator)+os.Getenv("PATH"))
	workerBinary(t) // `up` runs the worker from beside this test binary
	dir := testhost.ShortDir(t)

	first := exec.Command(os.Args[0], "up", "--chat", "--state-dir", dir)
	first.Env = append(os.Environ(), "SHELLDON_TEST_MAIN=1")
	typed, err := first.StdinPipe() // held open: the chat runs until it closes
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		typed.Close()
		first.Process.Kill()
		first.Wait()
	})
	addrFile := filepath.Join(dir, "demo-model.addr")
	logFile := filepath.Join(dir, "shelldon.log")
	var addr []byte
	deadline := time.Now().Add(20 * time.Second)
	for {
		log, _ := os.ReadFile(logFile)
		if addr, err = os.ReadFile(addrFile); err == nil && strings.Contains(string(log), "core ready") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first up did not come up:\n%s", log)
		}
		time.Sleep(50 * time.Millisecond)
	}

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
