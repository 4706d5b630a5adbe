package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"shelldon/contracts"
	"strconv"
	"strings"
	"testing"
	"time"

	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/testhost"
)

// runCLI runs the command line as main would, bounded so that a command
// that wrongly starts serving fails the test instead of hanging it.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	err = run(ctx, args, strings.NewReader(""), &out, &errOut)
	if ctx.Err() != nil {
		t.Fatalf("shelldon %q ran until the test's deadline", args)
	}
	return out.String(), errOut.String(), err
}

// configFile writes a configuration whose state directory is a fresh one
// and returns the file and that directory.
func configFile(t *testing.T, body string) (path, stateDir string) {
	t.Helper()
	stateDir = testhost.ShortDir(t)
	path = filepath.Join(t.TempDir(), "shelldon.toml")
	content := "state_dir = " + strconv.Quote(stateDir) + "\n" + body
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, stateDir
}

func TestCLIDaemonRefusesABadConfiguration(t *testing.T) {
	tests := []struct {
		name string
		body string
		key  string
	}{
		{"unknown key", "[timeouts]\nwroker = \"20s\"\n", "timeouts.wroker"},
		{"wrong type", "[turn]\nhistory_messages = \"many\"\n", "turn.history_messages"},
		{"timeouts out of order", "[timeouts]\nworker = \"30s\"\nreap = \"20s\"\nturn = \"10s\"\n", "timeouts"},
		{"syntax", "[timeouts\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, stateDir := configFile(t, tt.body)
			_, _, err := runCLI(t, "daemon", "--config", path)
			if err == nil {
				t.Fatalf("shelldon daemon with %q = nil error", tt.body)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.key) {
				t.Errorf("shelldon daemon with %q = %q, want it to name %s and %q", tt.body, err, path, tt.key)
			}
			if _, err := os.Stat(filepath.Join(stateDir, "bus.sock")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("shelldon daemon with a bad configuration left a socket (stat: %v)", err)
			}
			if entries, _ := os.ReadDir(stateDir); len(entries) != 0 {
				t.Errorf("shelldon daemon with a bad configuration wrote %d entries into its state directory", len(entries))
			}
		})
	}
}

func TestCLIMissingConfigFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.toml")
	_, _, err := runCLI(t, "daemon", "--config", missing)
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("shelldon daemon --config %s = %v, want it to say the file is missing", missing, err)
	}
}

// turnsFixture is a state directory whose database holds three turns:
// one that ended well, one that crashed, one still running. Between them
// they have every field a turn can have.
func turnsFixture(t *testing.T) (dir string, start time.Time) {
	t.Helper()
	dir = testhost.ShortDir(t)
	store, err := state.Open(statedir.Layout{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(store.Turns().Start(ctx, state.TurnStart{ID: "t-ok", Kind: "chat", Started: start, Preview: "hello there"}))
	must(store.Turns().Finish(ctx, state.TurnEnd{ID: "t-ok", Ended: start.Add(1500 * time.Millisecond), Outcome: "ok", ModelTime: 800 * time.Millisecond,
		Usage: contracts.UsageByProvider{{Provider: "openrouter", Usage: contracts.Usage{PromptTokens: 1200, CompletionTokens: 50}},
			{Provider: "local", Usage: contracts.Usage{PromptTokens: 34, CompletionTokens: 6}}}}))
	must(store.Turns().Start(ctx, state.TurnStart{ID: "t-bad", Kind: "chat", Started: start.Add(time.Minute), Preview: `say "hi"`}))
	must(store.Turns().Finish(ctx, state.TurnEnd{ID: "t-bad", Ended: start.Add(time.Minute + 30*time.Second), Outcome: "crashed", Error: "worker ended without a result",
		WorkerPeak: 256 << 20, WorkerCPU: 1200 * time.Millisecond, WorkerExit: "oom-kill", WorkerJoin: 34 * time.Millisecond}))
	must(store.Turns().Start(ctx, state.TurnStart{ID: "t-now", Kind: "chat", Started: start.Add(2 * time.Minute), Preview: "still thinking"}))
	must(store.Close())
	return dir, start
}

func TestCLITurns(t *testing.T) {
	dir, start := turnsFixture(t)
	out, _, err := runCLI(t, "turns", "--state-dir", dir)
	if err != nil {
		t.Fatalf("shelldon turns = %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("shelldon turns printed %d lines, want a header and 3 turns:\n%s", len(lines), out)
	}
	if fields := strings.Fields(lines[0]); strings.Join(fields, " ") != "TURN KIND STARTED TOOK SPAWN MODEL TOKENS PROVIDERS PEAK CPU WORKER OUTCOME MESSAGE" {
		t.Errorf("header = %q", lines[0])
	}
	rows := []struct {
		id   string
		want []string
	}{
		{"t-now", []string{"running", `"still thinking"`}},
		{"t-bad", []string{"30s", "34ms", "256.0MiB", "1.2s", "oom-kill", "crashed: worker ended without a result", `"say \"hi\""`}},
		{"t-ok", []string{"1.5s", "800ms", "1234+56", " openrouter,local ", " ok ", `"hello there"`}},
	}
	for i, row := range rows {
		line := lines[i+1]
		if !strings.HasPrefix(line, row.id+" ") {
			t.Errorf("row %d = %q, want turn %s (newest first)", i+1, line, row.id)
		}
		for _, want := range row.want {
			if !strings.Contains(line, want) {
				t.Errorf("row of %s = %q, want it to show %q", row.id, line, want)
			}
		}
	}

	out, _, err = runCLI(t, "turns", "--state-dir", dir, "-n", "1")
	if err != nil {
		t.Fatalf("shelldon turns -n 1 = %v", err)
	}
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "t-now ") {
		t.Errorf("shelldon turns -n 1 printed\n%s\nwant the header and the newest turn", out)
	}

	out, _, err = runCLI(t, "turns", "--state-dir", dir, "--json")
	if err != nil {
		t.Fatalf("shelldon turns --json = %v", err)
	}
	var got []turnJSON
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var j turnJSON
		if err := json.Unmarshal([]byte(line), &j); err != nil {
			t.Fatalf("shelldon turns --json line %q: %v", line, err)
		}
		got = append(got, j)
	}
	bad, ok := start.Add(time.Minute+30*time.Second), start.Add(1500*time.Millisecond)
	want := []turnJSON{
		{ID: "t-now", Kind: "chat", Started: start.Add(2 * time.Minute), Preview: "still thinking"},
		{ID: "t-bad", Kind: "chat", Started: start.Add(time.Minute), Ended: &bad, Outcome: "crashed", Error: "worker ended without a result",
			Preview: `say "hi"`, TotalMS: 30000, SpawnMS: 34, WorkerPeak: 256 << 20, WorkerCPUMS: 1200, WorkerResult: "oom-kill"},
		{ID: "t-ok", Kind: "chat", Started: start, Ended: &ok, Outcome: "ok", Preview: "hello there", TotalMS: 1500, ModelMS: 800,
			PromptTokens: 1234, CompletionTokens: 56, Providers: []string{"openrouter", "local"}},
	}
	if len(got) != 3 {
		t.Fatalf("shelldon turns --json printed %d turns, want 3:\n%s", len(got), out)
	}
	for i, w := range want {
		g := got[i]
		if !g.Started.Equal(w.Started) || (g.Ended == nil) != (w.Ended == nil) || (g.Ended != nil && !g.Ended.Equal(*w.Ended)) {
			t.Errorf("turn %s: started %v, ended %v; want %v, %v", w.ID, g.Started, g.Ended, w.Started, w.Ended)
		}
		g.Started, g.Ended, w.Started, w.Ended = time.Time{}, nil, time.Time{}, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("shelldon turns --json: %+v, want %+v", g, w)
		}
	}
}

func TestCLITurnsOnAnEmptyState(t *testing.T) {
	dir := testhost.ShortDir(t)
	store, err := state.Open(statedir.Layout{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, "turns", "--state-dir", dir)
	if err != nil || out != "no turns yet\n" {
		t.Errorf("shelldon turns on an empty state = %q, %v; want %q", out, err, "no turns yet\n")
	}
	if out, _, err := runCLI(t, "turns", "--state-dir", dir, "--json"); err != nil || out != "" {
		t.Errorf("shelldon turns --json on an empty state = %q, %v; want nothing", out, err)
	}
}

func TestCLITurnsWithoutAState(t *testing.T) {
	dir := testhost.ShortDir(t)
	_, _, err := runCLI(t, "turns", "--state-dir", dir)
	if err == nil || !strings.Contains(err.Error(), "has the daemon run yet?") {
		t.Errorf("shelldon turns where no daemon ran = %v, want it to say there is no database yet", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("shelldon turns created %d entries in %s", len(entries), dir)
	}
}

// TestCLITurnsOnADamagedDatabase: `shelldon turns` on a state.db whose
// header a bad write smashed says that the database is damaged and what
// to do, and leaves the file as it is (core moves it aside at its next
// start; a reading command changes nothing).
func TestCLITurnsOnADamagedDatabase(t *testing.T) {
	dir := testhost.ShortDir(t)
	layout := statedir.Layout{Root: dir}
	store, err := state.Open(layout)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	garbage := bytes.Repeat([]byte("garbage!"), 512)
	if err := os.WriteFile(layout.DB(), garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"turns"}, {"turns", "--json"}, {"tools"}} {
		_, _, err := runCLI(t, append(args, "--state-dir", dir)...)
		if err == nil {
			t.Fatalf("shelldon %q on a damaged database = nil error", args)
		}
		for _, want := range []string{layout.DB(), "damaged", "shelldon doctor", "restart"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("shelldon %q on a damaged database = %q, want it to say %q", args, err, want)
			}
		}
	}
	if got, err := os.ReadFile(layout.DB()); err != nil || !bytes.Equal(got, garbage) {
		t.Errorf("state.db after the reading commands: %d bytes, %v; want it untouched", len(got), err)
	}
}

func TestCLIDoctorWithABadConfiguration(t *testing.T) {
	path, _ := configFile(t, "[bus]\nmax_frame = true\n")
	out, errOut, err := runCLI(t, "doctor", "--config", path)
	if !errors.Is(err, errQuiet) {
		t.Errorf("shelldon doctor with a bad configuration = %v, want the already-reported failure", err)
	}
	if !strings.HasPrefix(out, "FAIL configuration") || !strings.Contains(out, path) || !strings.Contains(out, "bus.max_frame") || !strings.Contains(out, "— fix:") {
		t.Errorf("shelldon doctor printed %q, want a FAIL configuration line naming %s, the key and a fix", out, path)
	}
	if errOut != "" {
		t.Errorf("shelldon doctor wrote %q to stderr", errOut)
	}
}
