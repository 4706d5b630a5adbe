package daemon

import (
	"bytes"
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
	"shelldon/testhost"
)

// TestADamagedStateDatabaseIsToldToTheOwner: core starts on a state.db
// that is garbage — as an SD card leaves it after a bad write — instead of
// failing into a restart loop, and tells the owner what was kept and what
// was lost.
func TestADamagedStateDatabaseIsToldToTheOwner(t *testing.T) {
	dir := testhost.ShortDir(t)
	layout := statedir.Layout{Root: dir}
	first, err := state.Open(layout)
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	if err := os.WriteFile(layout.DB(), bytes.Repeat([]byte("not sqlite"), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(layout.MemoryDir(), "coffee.md"), []byte("hazelnut\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := state.Open(layout)
	if err != nil {
		t.Fatalf("Open of a damaged state.db = %v, want core to start", err)
	}
	t.Cleanup(func() { store.Close() })
	cfg := config.Default()
	cfg.StateDir, cfg.Socket = dir, filepath.Join(dir, "bus.sock")
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	serveCore(t, Options{Config: cfg, Store: store, Launcher: launch.Child{}, WorkerArgv: []string{"worker"}, Clock: clk,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	got := make(chan contracts.Envelope, 16)
	listen(t, cfg.Socket, contracts.RoleTransport, func(env contracts.Envelope) { got <- env })
	deadline := time.After(waitLimit)
	var told string
	for told == "" {
		clk.Advance(expiryCheck)
		select {
		case env := <-got:
			var out contracts.Outbound
			if env.Kind == contracts.KindOutbound && env.Decode(&out) == nil {
				told = out.Text
			}
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatal("the owner was never told of the damaged database")
		}
	}
	for _, want := range []string{"state database was damaged", layout.DamagedPrefix(), "kept my memory", "lost our chat history"} {
		if !strings.Contains(told, want) {
			t.Errorf("the owner was told %q, want it to say %q", told, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(layout.MemoryDir(), "coffee.md")); err != nil || string(b) != "hazelnut\n" {
		t.Errorf("the memory tree after the recovery: %q, %v", b, err)
	}
}
