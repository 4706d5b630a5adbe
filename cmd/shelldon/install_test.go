package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/demomodel"
	"shelldon/testhost"
	"shelldon/testhost/systemdhost"
	"shelldon/transports/telegram/telegramtest"
)

// TestInstalledUnderSystemd installs shelldon into a real systemd as
// `make install` does on a board — the binary, the units, the users — and
// lives with it: core reaches READY, a turn runs in its shelldon-turn@
// unit with its limits and leaves its story in the journal, a killed
// worker leaves a failed unit that the next turn does not trip over, a
// turn past R is ended by systemd and degraded by core, and a core killed
// or wedged is restarted by systemd and serves the next message; and a
// core killed or restarted while a turn runs and three messages wait over
// Telegram loses none of them.
func TestInstalledUnderSystemd(t *testing.T) {
	host := systemdhost.Boot(t)
	host.Install(t, buildForHost(t, "shelldon"), buildForHost(t, "shelldon-worker"), buildForHost(t, "shelldon-demo-model"))

	const modelAddr = "127.0.0.1:18080"
	script := []demomodel.Step{
		{Text: "hello from an installed pet", Delay: 1500 * time.Millisecond},
		{Text: "hello over Telegram"},
		{Text: "never heard: the worker is killed", Delay: 20 * time.Second},
		{Text: "after the kill"},
		{Text: "never heard: past R", Delay: 20 * time.Second},
		{Text: "after the timeout"},
		{Text: "after the restart"},
		{Text: "after the watchdog"},
		{Text: "never heard: core is killed", Delay: 20 * time.Second},
		{Text: "A answered after the kill"},
		{Text: "B to D answered after the kill"},
		{Text: "A answered within the grace", Delay: 2 * time.Second},
		{Text: "B to D answered after the restart"},
	}
	scriptFile := filepath.Join(host.Dir, "model.json")
	writeJSON(t, scriptFile, script)
	host.Must(t, "systemd-run", "--unit=demo-model", "/usr/bin/shelldon-demo-model", "--listen", modelAddr, "--script", scriptFile)

	// The state directory is shared with this test, which joins core's
	// bus as the owner's transport and reads the turns table.
	state := filepath.Join(host.Dir, "state")
	if err := os.Mkdir(state, 0o750); err != nil {
		t.Fatal(err)
	}
	host.Must(t, "chgrp", "shelldon", state)
	cfg := config.Default()
	// Room for a slow start on a busy machine: the first turn waits 1.5 s
	// on the model, and the loop stops asking it with under 2 s left.
	cfg.Timeouts.Worker.Duration, cfg.Timeouts.Reap.Duration, cfg.Timeouts.Turn.Duration = 6*time.Second, 8*time.Second, 12*time.Second
	cfg.Worker.CPUSeconds = 8
	cfg.Providers = []config.Provider{{Name: "demo", BaseURL: "http://" + modelAddr + "/v1", Model: demomodel.ModelName}}
	// The owner's bot: a Bot API server of the test, listening inside the
	// host's private network, and the token where the owner puts it,
	// which the unit loads as a credential.
	api := telegramtest.NewOn(t, botToken, host.Listen(t))
	cfg.Telegram.APIURL, cfg.Telegram.AllowedUsers = api.URL(), []int64{ownerID}
	tokenFile := filepath.Join(host.Dir, "token")
	if err := os.WriteFile(tokenFile, []byte(botToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	host.Must(t, "install", "-m", "0600", tokenFile, "/etc/shelldon/telegram/token")
	toml, err := os.ReadFile(writeConfig(t, &pet{cfg: cfg}))
	if err != nil {
		t.Fatal(err)
	}
	configFile := filepath.Join(host.Dir, "shelldon.toml")
	if err := os.WriteFile(configFile, toml, 0o644); err != nil {
		t.Fatal(err)
	}
	host.Must(t, "install", "-D", "-m", "0644", configFile, "/etc/shelldon/shelldon.toml")
	dropIn(t, host, "shelldon.service", "Environment=SHELLDON_STATE_DIR="+state+" SHELLDON_SOCKET="+state+"/bus.sock\nWatchdogSec=3s\nRestartSec=500ms")
	dropIn(t, host, "shelldon-broker.service", "Environment=SHELLDON_SOCKET="+state+"/bus.sock")
	host.Must(t, "systemctl", "daemon-reload")

	// Type=notify: start returns once core said READY.
	if _, err := host.Exec(context.Background(), "systemctl", "start", "shelldon.service"); err != nil {
		journal, _ := host.Exec(context.Background(), "journalctl", "--no-pager", "-o", "cat", "-u", "shelldon.service", "-u", "shelldon-broker.service")
		t.Fatalf("%v\n%s", err, journal)
	}
	if got := host.Must(t, "systemctl", "show", "-p", "ActiveState,StatusText", "shelldon.service"); !strings.Contains(got, "ActiveState=active") || !strings.Contains(got, "StatusText=waiting for a message") {
		t.Fatalf("shelldon.service after start:\n%s", got)
	}

	p := &pet{t: t, replies: make(chan contracts.Outbound, 64)}
	p.cfg.StateDir, p.cfg.Socket = state, filepath.Join(state, "bus.sock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.joinBus(ctx)

	t.Run("a turn runs in its unit", func(t *testing.T) {
		p.t = t
		p.say("hi there")
		unit := waitTurnUnit(t, host)
		props := host.Must(t, "systemctl", "show", "-p", "MemoryMax,CPUQuotaPerSecUSec,User,Slice,Description", unit)
		for _, want := range []string{"MemoryMax=268435456", "CPUQuotaPerSecUSec=1s", "User=shelldon-worker", "Slice=shelldon-turns.slice", "Description=shelldon turn: hi there"} {
			if !strings.Contains(props, want) {
				t.Errorf("%s while it runs lacks %s:\n%s", unit, want, props)
			}
		}
		if r := p.reply(20 * time.Second); r.Text != "hello from an installed pet" {
			journal, _ := host.Exec(context.Background(), "journalctl", "--no-pager", "-o", "short-precise", "-u", "shelldon.service", "-u", "shelldon-broker.service", "-u", "shelldon-turn@*", "-u", "demo-model.service")
			t.Fatalf("reply = %+v; turns %+v\n%s", r, p.turns(), journal)
		}
		turn := p.waitTurns(1)[0]
		waitGone(t, host, unit)
		journal := host.Must(t, "journalctl", "--no-pager", "-o", "json", "SHELLDON_TURN="+turn.ID)
		for _, want := range []string{`"SHELLDON_EVENT":"turn-start"`, `"SHELLDON_EVENT":"turn-end"`, `"SYSLOG_IDENTIFIER":"shelldon-worker"`} {
			if !strings.Contains(journal, want) {
				t.Errorf("journalctl SHELLDON_TURN=%s lacks %s:\n%s", turn.ID, want, journal)
			}
		}
	})

	t.Run("the owner chats over Telegram", func(t *testing.T) {
		p.t = t
		api.SendText(ownerID, "hi from my phone")
		api.WaitMessage(t, ownerID, textHas("hello over Telegram"))
		if got := host.Must(t, "journalctl", "--no-pager", "-o", "cat", "-u", "shelldon.service"); !strings.Contains(got, "telegram: connected") {
			t.Errorf("the journal does not say the bot connected:\n%s", got)
		}
	})

	t.Run("core loads its credentials and shares the host's mounts", func(t *testing.T) {
		// Core mounts each sandboxed command's overlay, which the
		// command's own unit must see: LoadCredential= must not give
		// core a mount namespace of its own.
		pid := strings.TrimSpace(host.Must(t, "systemctl", "show", "-p", "MainPID", "--value", "shelldon.service"))
		got := host.Must(t, "sh", "-c", "readlink /proc/1/ns/mnt /proc/"+pid+"/ns/mnt; tr '\\0' '\\n' < /proc/"+pid+"/environ | grep ^CREDENTIALS_DIRECTORY=")
		lines := strings.Fields(got)
		if len(lines) != 3 || lines[0] != lines[1] || !strings.HasPrefix(lines[2], "CREDENTIALS_DIRECTORY=/run/credentials/shelldon.service") {
			t.Errorf("PID 1's and core's mount namespaces, and core's credentials:\n%s", got)
		}
	})

	t.Run("a killed worker leaves a failed unit and no harm", func(t *testing.T) {
		p.t = t
		p.waitTurns(2) // the first turn and the Telegram one
		p.say("second")
		unit := waitTurnUnit(t, host)
		// Killed once its question reached the model, so the step it
		// took is not left for the next turn.
		waitModelRequests(t, host, 3)
		host.Must(t, "systemctl", "kill", "--signal=SIGKILL", unit)
		if r := p.reply(20 * time.Second); !r.Degraded {
			t.Fatalf("reply after the worker was killed = %+v, want the degrade answer", r)
		}
		if out, _ := host.Exec(context.Background(), "systemctl", "is-failed", unit); strings.TrimSpace(string(out)) != "failed" {
			t.Errorf("systemctl is-failed %s = %q, want failed", unit, out)
		}
		p.say("third")
		if r := p.reply(20 * time.Second); r.Text != "after the kill" {
			t.Fatalf("reply after a failed unit = %+v", r)
		}
	})

	t.Run("a turn past R is ended by systemd", func(t *testing.T) {
		p.t = t
		p.waitTurns(4) // so the unit found running is this turn's
		p.say("take your time")
		// A stopped worker cannot give up at W by itself: only the unit's
		// RuntimeMaxSec (R) ends it.
		unit := waitTurnUnit(t, host)
		waitModelRequests(t, host, 5)
		host.Must(t, "systemctl", "kill", "--signal=SIGSTOP", unit)
		if r := p.reply(20 * time.Second); !r.Degraded {
			t.Fatalf("reply to a turn past R = %+v, want the degrade answer", r)
		}
		turns := p.waitTurns(5)
		if got := turns[0]; got.WorkerExit != "timeout" || got.Total >= cfg.Timeouts.Turn.Duration {
			t.Errorf("turn past R = %+v, want its unit's result timeout, degraded before T (%v)", got, cfg.Timeouts.Turn.Duration)
		}
		p.say("and now?")
		if r := p.reply(20 * time.Second); r.Text != "after the timeout" {
			t.Fatalf("reply after a timed-out unit = %+v", r)
		}
	})

	t.Run("a killed core is restarted", func(t *testing.T) {
		p.t = t
		host.Must(t, "systemctl", "kill", "--signal=SIGKILL", "--kill-whom=main", "shelldon.service")
		waitRestarts(t, host, 1)
		p.waitJoin(30 * time.Second)
		p.say("are you back?")
		if r := p.reply(20 * time.Second); r.Text != "after the restart" {
			t.Fatalf("reply after a restart = %+v", r)
		}
	})

	t.Run("a wedged core is restarted by the watchdog", func(t *testing.T) {
		p.t = t
		p.say(daemon.WedgeMessage)
		waitRestarts(t, host, 2)
		if result := host.Must(t, "journalctl", "--no-pager", "-u", "shelldon.service", "-o", "cat"); !strings.Contains(result, "Watchdog timeout") {
			t.Errorf("the journal does not say the watchdog fired:\n%s", result)
		}
		p.waitJoin(30 * time.Second)
		p.say("still there?")
		if r := p.reply(20 * time.Second); r.Text != "after the watchdog" {
			t.Fatalf("reply after the watchdog = %+v", r)
		}
	})

	asked := []string{"B: the second question", "C: the third", "D: the fourth"}
	t.Run("a core killed mid-turn loses no message", func(t *testing.T) {
		p.t = t
		p.waitTurns(8)
		first := "A: a long question"
		api.SendText(ownerID, first)
		waitModelRequests(t, host, 9)
		for _, m := range asked {
			api.SendText(ownerID, m)
		}
		p.waitKept(4)
		host.Must(t, "systemctl", "kill", "--signal=SIGKILL", "--kill-whom=main", "shelldon.service")
		waitRestarts(t, host, 3)
		note := api.WaitMessage(t, ownerID, textHas("I was restarted before I could answer “A:"))
		for _, m := range append([]string{first}, asked...) {
			if !strings.Contains(note.Text, m) {
				t.Errorf("the owner was told %q, which does not name %q", note.Text, m)
			}
		}
		api.WaitMessage(t, ownerID, textHas("A answered after the kill"))
		api.WaitMessage(t, ownerID, textHas("B to D answered after the kill"))
	})

	t.Run("a restart mid-turn lets the turn finish and loses no message", func(t *testing.T) {
		p.t = t
		p.waitTurns(11)
		api.SendText(ownerID, "A: one more long one")
		waitModelRequests(t, host, 12)
		for _, m := range asked {
			api.SendText(ownerID, m+", again")
		}
		p.waitKept(4)
		host.Must(t, "systemctl", "restart", "shelldon.service")
		api.WaitMessage(t, ownerID, textHas("A answered within the grace"))
		note := api.WaitMessage(t, ownerID, textHas("I was restarted before I could answer “B: the second question, again"))
		if strings.Contains(note.Text, "A: one more") {
			t.Errorf("the owner was told %q, naming the message answered within the grace", note.Text)
		}
		api.WaitMessage(t, ownerID, textHas("B to D answered after the restart"))
	})
}

// waitKept waits until core keeps n of the owner's messages unanswered.
func (p *pet) waitKept(n int) {
	p.t.Helper()
	poll(p.t, fmt.Sprintf("%d messages kept unanswered", n), func() (string, bool) {
		store, err := state.OpenReadOnly(statedir.Layout{Root: p.cfg.StateDir})
		if err != nil {
			return "", false
		}
		defer store.Close()
		left, err := store.Intake().Unanswered(context.Background())
		return "", err == nil && len(left) >= n
	})
}

// waitModelRequests waits until the demo model in the host has taken n
// requests, as its log says.
func waitModelRequests(t *testing.T, host *systemdhost.Host, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, _ := host.Exec(context.Background(), "journalctl", "--no-pager", "-o", "cat", "-u", "demo-model.service")
		if strings.Count(string(out), "arrived") >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo model took fewer than %d requests:\n%s", n, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// buildForHost builds one of this module's commands, static, for the
// test host, with the test hooks (the test wedges core's loop).
func buildForHost(t *testing.T, command string) string {
	t.Helper()
	goTool := testhost.Tool(t, "go", "golang")
	out := filepath.Join(t.TempDir(), command)
	build := exec.Command(goTool, "build", "-tags", "shelldon_testhooks", "-o", out, "shelldon/cmd/"+command)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", command, err, msg)
	}
	return out
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// dropIn adds settings to a unit's [Service] section, as an owner's
// /etc/systemd/system/<unit>.d/*.conf would.
func dropIn(t *testing.T, host *systemdhost.Host, unit, settings string) {
	t.Helper()
	file := filepath.Join(host.Dir, unit+".conf")
	if err := os.WriteFile(file, []byte("[Service]\n"+settings+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	host.Must(t, "install", "-D", "-m", "0644", file, "/etc/systemd/system/"+unit+".d/test.conf")
}

// waitTurnUnit waits for a turn's unit to run and returns its name.
func waitTurnUnit(t *testing.T, host *systemdhost.Host) string {
	t.Helper()
	return poll(t, "a running shelldon-turn@ unit", func() (string, bool) {
		out, _ := host.Exec(context.Background(), "systemctl", "list-units", "--no-legend", "--plain", "--state=running", "shelldon-turn@*")
		if fields := strings.Fields(string(out)); len(fields) > 0 {
			return fields[0], true
		}
		return "", false
	})
}

// waitGone waits until systemd has collected a unit.
func waitGone(t *testing.T, host *systemdhost.Host, unit string) {
	t.Helper()
	poll(t, unit+" collected", func() (string, bool) {
		out, _ := host.Exec(context.Background(), "systemctl", "show", "-p", "LoadState", unit)
		return "", strings.TrimSpace(string(out)) == "LoadState=not-found"
	})
}

// waitRestarts waits until systemd has restarted core n times in all and
// it is running again.
func waitRestarts(t *testing.T, host *systemdhost.Host, n int) {
	t.Helper()
	restarts := fmt.Sprintf("NRestarts=%d\n", n)
	poll(t, "shelldon.service restarted: "+restarts, func() (string, bool) {
		out, _ := host.Exec(context.Background(), "systemctl", "show", "-p", "NRestarts,ActiveState", "shelldon.service")
		return "", strings.Contains(string(out), restarts) && strings.Contains(string(out), "ActiveState=active")
	})
}

// poll asks done until it says yes, for up to 30 s.
func poll(t testing.TB, what string, done func() (string, bool)) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if v, ok := done(); ok {
			return v
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("waited 30s for %s", what)
	return ""
}
