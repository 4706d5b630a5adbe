package main

import (
	"context"
	"image"
	_ "image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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
// prompt gets a real turn, and /help lists the phrases again.
func TestUpFallsBackToTheLabelledDemoModel(t *testing.T) {
	goTool := testhost.Tool(t, "go", "golang (Go 1.26)")
	bin := t.TempDir()
	build := exec.Command(goTool, "build", "-o", filepath.Join(bin, demoModelBinary), "shelldon/cmd/shelldon-demo-model")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the demo model: %v\n%s", err, out)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	// The workers are this race-built test binary; see testConfig.
	t.Setenv("SHELLDON_WORKER_MEMORY_LIMIT", "0")
	state := testhost.ShortDir(t)

	in, typed := io.Pipe()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"up", "--chat", "--state-dir", state}, in, &out, io.Discard)
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
