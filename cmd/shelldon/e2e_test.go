package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/telegram/telegramtest"
	"shelldon/demomodel"
	"shelldon/panel/faces"
	"shelldon/panel/render"
	"shelldon/sandbox/image/imagetest"
	"shelldon/testhost/vm"
)

// Guest ports on vm.ForwardAddress that lead to the test's servers.
const (
	e2eBotAPIPort = 8081
	e2eModelPort  = 8082
)

// TestWholePetInAVM installs the .deb on a Debian VM with cgroup v2 (qemu),
// points it at a local Bot API server and the scripted model on this
// machine, and lives the owner's life with it: everything through
// Telegram and the installed services, as on the board.
func TestWholePetInAVM(t *testing.T) {
	vm.Require(t)
	sandboxImage := imagetest.Image(t) // the guest has no network to build one
	deb := vm.BuildDeb(t)

	model := demomodel.New(
		// 2. a chat turn; a FREE tool; a RISKY command approved; a git push denied
		demomodel.Step{Text: "Hello from the VM!\nTHOUGHT: a whole new machine\nFACE: excited"},
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "t1", Name: "get_time", Args: `{}`}}},
		demomodel.Step{Text: "I looked at the clock.\nFACE: smart"},
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "s1", Name: "run_shell", Args: `{"command": "echo made in the sandbox > sandboxed.txt"}`}}},
		demomodel.Step{Text: "Done: sandboxed.txt is there."},
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "g1", Name: "git", Args: `{"args": "push origin main"}`}}},
		demomodel.Step{Text: "All right, I won't push."},
		// 3. a slow turn
		demomodel.Step{Text: "that took a while\nTHOUGHT: slow and steady\nFACE: cool", Delay: 6 * time.Second},
		// 5. a parked approval across a restart
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "s2", Name: "run_shell", Args: `{"command": "echo after the restart > restarted.txt"}`}}},
		demomodel.Step{Text: "Saved after the restart."},
		// 6. a turn core dies in, then a turn after
		demomodel.Step{Text: "never heard: core was killed", Delay: 20 * time.Second},
		demomodel.Step{Text: "back again"},
	)
	modelServer := httptest.NewServer(model)
	t.Cleanup(modelServer.Close)
	api := telegramtest.New(t, botToken)
	api.SetWaitLimit(90 * time.Second) // an emulated CPU: turns take seconds
	guest := vm.Boot(t, vm.Options{
		Debs:    []string{deb},
		Trees:   []string{sandboxImage.Dir},
		Forward: map[int]int{e2eBotAPIPort: urlPort(t, api.URL()), e2eModelPort: urlPort(t, modelServer.URL)},
	})
	ctx := context.Background()
	config := fmt.Sprintf(`[[provider]]
name = "demo"
base_url = "http://%[1]s:%[2]d/v1"
model = %[3]q

[telegram]
allowed_users = [%[4]d]
api_url = "http://%[1]s:%[5]d"
poll_timeout = "5s"
retry_max = "2s"

[panel]
display = "png"
`, vm.ForwardAddress, e2eModelPort, demomodel.ModelName, ownerID, e2eBotAPIPort)
	if err := guest.WriteFile(ctx, "/etc/shelldon/shelldon.toml", []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := guest.WriteFile(ctx, "/etc/shelldon/telegram/token", []byte(botToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	journal := func() string {
		out, _ := guest.Exec(ctx, "journalctl", "--no-pager", "-o", "short-precise", "-u", "shelldon*", "-u", "shelldon-turn@*", "-u", "shelldon-run@*", "-n", "300")
		return string(out)
	}
	if _, err := guest.Exec(ctx, "systemctl", "enable", "--now", "shelldon.service", "shelldon-broker.service", "shelldon-panel.service"); err != nil {
		t.Fatalf("systemctl enable --now shelldon: %v\n%s", err, journal())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the guest's journal:\n%s", journal())
		}
	})
	// Nothing below can work without the bot: fail at once, with the story.
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(journal(), "telegram: connected") {
		if time.Now().After(deadline) {
			t.Fatalf("the bot never connected; the guest's journal:\n%s", journal())
		}
		time.Sleep(time.Second)
	}
	ws := "/var/lib/shelldon/workspace/"

	t.Run("1 the services run and doctor is content", func(t *testing.T) {
		for _, unit := range []string{"shelldon.service", "shelldon-broker.service", "shelldon-panel.service"} {
			waitFor(t, fmt.Sprintf("%s active", unit), func() bool {
				out, _ := guest.Exec(ctx, "systemctl", "is-active", unit)
				return strings.TrimSpace(string(out)) == "active"
			})
		}
		// The bot is up once it registered its commands.
		api.WaitCall(t, "setMyCommands", nil)
		out, err := guest.Exec(ctx, "shelldon", "doctor")
		if err != nil {
			t.Errorf("shelldon doctor: %v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			// The VM has no SPI header; every other check must pass.
			if !strings.HasPrefix(line, "ok") && line != "" && !strings.Contains(line, "SPI (panel)") {
				t.Errorf("doctor: %s", line)
			}
		}
	})

	t.Run("2 the owner's life over Telegram", func(t *testing.T) {
		api.SendText(ownerID, "hello VM")
		api.WaitMessage(t, ownerID, textHas("Hello from the VM!"))
		api.SendText(ownerID, "what time is it?")
		api.WaitMessage(t, ownerID, textHas("I looked at the clock."))

		api.SendText(ownerID, "make me a file")
		ask := api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool {
			return len(m.Keyboard) == 1 && strings.Contains(m.Text, "sandboxed.txt")
		})
		tap(api, ask, "Approve")
		api.WaitMessage(t, ownerID, textHas("Done: sandboxed.txt is there."))
		if got, err := guest.ReadFile(ctx, ws+"sandboxed.txt"); err != nil || string(got) != "made in the sandbox\n" {
			t.Errorf("sandboxed.txt = %q, %v", got, err)
		}

		api.SendText(ownerID, "push it")
		push := api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool {
			return len(m.Keyboard) == 1 && strings.Contains(m.Text, "push")
		})
		tap(api, push, "Deny")
		api.WaitMessage(t, ownerID, textHas("All right, I won't push."))
	})

	t.Run("3 a slow turn in its unit, and its story in the journal", func(t *testing.T) {
		api.SendText(ownerID, "take your time")
		var unit string
		waitFor(t, "the turn's unit", func() bool {
			out, _ := guest.Exec(ctx, "systemctl", "list-units", "--no-legend", "--plain", "--state=running", "shelldon-turn@*")
			fields := strings.Fields(string(out))
			if len(fields) > 0 {
				unit = fields[0]
			}
			return unit != ""
		})
		out, _ := guest.Exec(ctx, "systemctl", "status", "--no-pager", unit)
		if status := string(out); !strings.Contains(status, "Memory:") || !strings.Contains(status, "max: 256.0M") {
			t.Errorf("systemctl status %s shows no MemoryMax:\n%s", unit, status)
		}
		api.WaitMessage(t, ownerID, textHas("that took a while"))
		turn := strings.TrimSuffix(strings.TrimPrefix(unit, "shelldon-turn@"), ".service")
		story := guest.Must(t, "journalctl", "--no-pager", "-o", "json", "SHELLDON_TURN="+turn)
		for _, want := range []string{`"SHELLDON_EVENT":"turn-start"`, `"SHELLDON_EVENT":"turn-end"`, `"SYSLOG_IDENTIFIER":"shelldon-worker"`} {
			if !strings.Contains(story, want) {
				t.Errorf("journalctl SHELLDON_TURN=%s lacks %s", turn, want)
			}
		}
	})

	// Step 4 of the scenario, OOM kills in a 512 MB guest, is not
	// here yet: see the note.
	t.Run("5 a parked approval survives a restart", func(t *testing.T) {
		api.SendText(ownerID, "one more file")
		ask := api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool {
			return len(m.Keyboard) == 1 && strings.Contains(m.Text, "restarted.txt")
		})
		// Counted before the restart: the new core's bot may register its
		// commands before systemctl returns.
		before := len(api.Calls("setMyCommands"))
		guest.Must(t, "systemctl", "restart", "shelldon.service")
		waitFor(t, "the bot back", func() bool { return len(api.Calls("setMyCommands")) > before })
		tap(api, ask, "Approve")
		api.WaitMessage(t, ownerID, textHas("Saved after the restart."))
		if got, err := guest.ReadFile(ctx, ws+"restarted.txt"); err != nil || string(got) != "after the restart\n" {
			t.Errorf("restarted.txt = %q, %v", got, err)
		}
	})

	t.Run("6 core killed mid-turn is restarted and leaves no turn behind", func(t *testing.T) {
		restarts := func() int {
			n, _ := strconv.Atoi(strings.TrimSpace(guest.Must(t, "systemctl", "show", "-P", "NRestarts", "shelldon.service")))
			return n
		}
		was := restarts()
		api.SendText(ownerID, "this one will be cut short")
		waitFor(t, "a turn unit", func() bool {
			out, _ := guest.Exec(ctx, "systemctl", "list-units", "--no-legend", "--plain", "--state=running", "shelldon-turn@*")
			return strings.TrimSpace(string(out)) != ""
		})
		guest.Must(t, "systemctl", "kill", "--signal=SIGKILL", "--kill-whom=main", "shelldon.service")
		waitFor(t, "systemd restarted core", func() bool { return restarts() > was })
		waitFor(t, "no turn unit left running", func() bool {
			out, _ := guest.Exec(ctx, "systemctl", "list-units", "--no-legend", "--plain", "--state=running", "shelldon-turn@*")
			return strings.TrimSpace(string(out)) == ""
		})
		api.SendText(ownerID, "are you back?")
		api.WaitMessage(t, ownerID, textHas("back again"))
	})

	t.Run("7 the panel shows the reaction face", func(t *testing.T) {
		// The last answered turn was a plain reply: the default face, and
		// no thought. The caption band and the face are compared; the
		// status strip moves with the uptime.
		glyphs, _ := faces.Registry{}.Lookup(faces.DefaultReply)
		want := render.Render(render.Scene{Face: glyphs})
		waitFor(t, "the reaction on the panel", func() bool {
			raw, err := guest.ReadFile(ctx, "/run/shelldon/panel.png")
			if err != nil {
				return false
			}
			img, err := png.Decode(bytes.NewReader(raw))
			return err == nil && sameBelowStrip(img, want)
		})
	})
}

// sameBelowStrip compares everything below the panel's status strip.
func sameBelowStrip(got image.Image, want *render.Frame) bool {
	b := want.Bounds()
	if got.Bounds() != b {
		return false
	}
	for y := 16; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			r, _, _, _ := got.At(x, y).RGBA()
			if (r < 0x8000) != want.Black(x, y) {
				return false
			}
		}
	}
	return true
}

func urlPort(t *testing.T, raw string) int {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// waitFor polls cond, for what the guest does in its own time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain: %s", what)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
