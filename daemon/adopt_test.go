package daemon

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/launch"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/daemon/toolstore"
	"shelldon/testhost"
)

// TestAnUpgradeAdoptsTheOldToolsOnce: on the first start after the
// upgrade, the tools an older shelldon kept in the workspace go to
// quarantine, never live, and the owner is told; a tools/ directory the
// owner makes afterwards is theirs, and no later start touches it.
func TestAnUpgradeAdoptsTheOldToolsOnce(t *testing.T) {
	dir := testhost.ShortDir(t)
	layout := statedir.Layout{Root: dir}
	ws := layout.Workspace()
	for name, body := range map[string]string{
		"tools/greet.py":      "def run():\n    return 'hi'\n",
		"tools/test_greet.py": "def test_x(): pass\n",
		"tools/greet.json":    `{"name": "greet", "description": "Greets."}`,
		"tools/notes.txt":     "the owner's own file",
	} {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := func() (*clock.Fake, chan contracts.Envelope, func()) {
		cfg := config.Default()
		cfg.StateDir, cfg.Socket = dir, filepath.Join(dir, "bus.sock")
		store, err := state.Open(layout)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
		stop := serveCore(t, Options{Config: cfg, Store: store, Launcher: launch.Child{}, WorkerArgv: []string{"worker"}, Clock: clk,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		got := make(chan contracts.Envelope, 16)
		listen(t, cfg.Socket, contracts.RoleTransport, func(env contracts.Envelope) { got <- env })
		// A core's stop is its store's close: the next core takes the
		// state directory's lock.
		return clk, got, func() { stop(); store.Close() }
	}
	told := func(clk *clock.Fake, got chan contracts.Envelope) string {
		deadline := time.After(waitLimit)
		for {
			clk.Advance(expiryCheck)
			select {
			case env := <-got:
				var out contracts.Outbound
				if env.Kind == contracts.KindOutbound && env.Decode(&out) == nil {
					return out.Text
				}
			case <-time.After(50 * time.Millisecond):
			case <-deadline:
				return ""
			}
		}
	}

	clk, got, stop := start()
	if text := told(clk, got); !strings.Contains(text, "put my tools greet away") {
		t.Fatalf("the owner was told %q, want the old tools put away", text)
	}
	if got, err := toolstore.ListDir(layout.ToolStore()); err != nil || len(got) != 1 || got[0] != (toolstore.Listed{Name: "greet", State: toolstore.Quarantined}) {
		t.Errorf("the tool store holds %+v, want greet in quarantine", got)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "tools", "notes.txt")); err != nil || string(b) != "the owner's own file" {
		t.Errorf("the owner's own file in tools/: %q, %v", b, err)
	}

	// The owner's project gets a tools/ directory of its own; a restart
	// leaves it be.
	if err := os.WriteFile(filepath.Join(ws, "tools", "build.py"), []byte("print('build')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stop()
	// A stopped core's leftover in the store's staging: its sweep shows
	// that the next core has tidied up.
	leftover := filepath.Join(layout.ToolStore(), "staging", "leftover")
	if err := os.Mkdir(leftover, 0o700); err != nil {
		t.Fatal(err)
	}
	clk, _, _ = start()
	deadline := time.Now().Add(waitLimit)
	for {
		clk.Advance(expiryCheck)
		if _, err := os.Stat(leftover); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted core never tidied up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(ws, "tools", "build.py")); err != nil {
		t.Errorf("a restart touched the owner's tools/build.py: %v", err)
	}
}
