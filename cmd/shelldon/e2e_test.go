package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/mcp/mcptest"
	"shelldon/demomodel"
	"shelldon/demomodel/phrases"
	"shelldon/faces"
	"shelldon/panel/render"
	"shelldon/sandbox/image/imagetest"
	"shelldon/testhost/vm"
	"shelldon/transports/telegram/telegramtest"
)

// TestWholePetInAVM installs the .deb on a Debian VM with cgroup v2 (qemu),
// points it at a local Bot API server and the scripted model on this
// machine, and lives the owner's life with it: everything through
// Telegram and the installed services, as on the board.
func TestWholePetInAVM(t *testing.T) {
	vm.Require(t, "amd64")
	sandboxImage := imagetest.Image(t) // the guest has no network to build one
	deb := vm.BuildDebWithTestHooks(t, "amd64")
	model := demomodel.New(
		// 2. a chat turn; a FREE tool; a RISKY command approved; a git push denied
		demomodel.Step{Text: "Hello from the VM!\nTHOUGHT: a whole new machine\nFACE: excited"},
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "t1", Name: "get_time", Args: `{}`}}},
		demomodel.Step{Text: "I looked at the clock.\nFACE: smart"},
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "s1", Name: "run_shell", Args: `{"command": "echo made in the sandbox > sandboxed.txt"}`}}},
		demomodel.Step{Text: "Done: sandboxed.txt is there."},
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "g1", Name: "git", Args: `{"args": "push origin main"}`}}},
		demomodel.Step{Text: "All right, I won't push."},
		proposal(t, "I wrote a greeting tool.", "greet", greetModule, greetTest),
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "h1", Name: "greet", Args: `{"name": "owner"}`}}},
		demomodel.Step{Text: "It says hello."},
		// 3. a slow turn
		demomodel.Step{Text: "that took a while\nTHOUGHT: slow and steady\nFACE: cool", Delay: 6 * time.Second},
		// 4. a worker killed by the kernel asks the model nothing; the turn
		// after it does; then a sandboxed command that grows without end
		demomodel.Step{Text: "Fine again."},
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "z1", Name: "run_shell", Args: `{"command": "tail /dev/zero > zeros.txt"}`}}},
		demomodel.Step{Text: "That was too much for the sandbox."},
		// 5. a parked approval across a restart
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "s2", Name: "run_shell", Args: `{"command": "echo after the restart > restarted.txt"}`}}},
		demomodel.Step{Text: "Saved after the restart."},
		// 6. a turn core dies in, then a turn after
		demomodel.Step{Text: "never heard: core was killed", Delay: 20 * time.Second},
		demomodel.Step{Text: "answered after all"},
		demomodel.Step{Text: "back again"},
		// 8. a voice note, then a photo
		demomodel.Step{Text: "Sleep well, owner."},
		demomodel.Step{Text: "A fine grey square."},
		// 9. a rule granted with Always, used, revoked
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "r1", Name: "run_shell", Args: `{"command": "touch stamp.txt"}`}}},
		demomodel.Step{Text: "Stamped."},
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "r2", Name: "run_shell", Args: `{"command": "touch stamp.txt"}`}}},
		demomodel.Step{Text: "Stamped again."},
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "r3", Name: "run_shell", Args: `{"command": "touch stamp.txt"}`}}},
		demomodel.Step{Text: "Not stamped."},
		// 10. an MCP server's read-only tool
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "m1", Name: "mcp_demo_count_letters", Args: `{"text": "hello VM"}`}}},
		demomodel.Step{Text: "Counted in its container."},
	)
	pet := bootPet(t, "amd64", sandboxImage, deb, model)
	guest, api, ctx := pet.guest, pet.api, context.Background()
	ws := "/var/lib/shelldon/workspace/"

	t.Run("1 the services run and doctor is content", func(t *testing.T) {
		checkServicesAndDoctor(t, pet)
		checkStateAccess(t, pet)
	})

	t.Run("2 the owner's life over Telegram", func(t *testing.T) {
		checkFirstTurn(t, pet, model, "hello VM", "Hello from the VM!\nTHOUGHT: a whole new machine\nFACE: excited")
		api.SendText(ownerID, "what time is it?")
		api.WaitMessage(t, ownerID, textHas("I looked at the clock."))

		checkApprovedCommand(t, pet, "make me a file", "sandboxed.txt", "made in the sandbox\n", "Done: sandboxed.txt is there.")
		checkSandboxUser(t, pet, "sandboxed.txt")

		api.SendText(ownerID, "push it")
		push := waitAsk(t, api, "push")
		tap(api, push, "Deny")
		api.WaitMessage(t, ownerID, textHas("All right, I won't push."))

		// A tool of its own: proposed, passed by pytest in the sandbox,
		// kept by a tap, and called in the next turn.
		api.SendText(ownerID, "write yourself a greeting tool")
		api.WaitMessage(t, ownerID, textHas("I wrote a greeting tool."))
		keep := waitAsk(t, api, "greet", "1 passed")
		tap(api, keep, "Approve")
		api.WaitMessage(t, ownerID, textHas("Kept: greet"))
		for _, name := range []string{"greet.py", "test_greet.py", "greet.json"} {
			guest.Must(t, "test", "-f", "/var/lib/shelldon/tools/live/"+name)
		}
		api.SendText(ownerID, "greet me")
		api.WaitMessage(t, ownerID, textHas("It says hello."))
		if got := toolAnswer(model.Requests(), "h1"); got != "exit 0\nhello, owner" {
			t.Errorf("greet answered %q", got)
		}
	})

	t.Run("3 a slow turn in its unit, and its story in the journal", func(t *testing.T) {
		checkTurnStory(t, pet, "take your time", "that took a while")
	})

	t.Run("4 the kernel's OOM killer ends a turn and a command, and the pet goes on", func(t *testing.T) {
		checkWorkerOOMKilled(t, pet, "are you all right?", "Fine again.")

		api.SendText(ownerID, "read all the zeros")
		ask := waitAsk(t, api, "/dev/zero")
		tap(api, ask, "Approve")
		api.WaitMessage(t, ownerID, textHas("That was too much for the sandbox."))
		if got := toolAnswer(model.Requests(), "z1"); !strings.HasPrefix(got, "killed: out of memory") {
			t.Errorf("the model heard %q of the command, want it killed for memory", got)
		}
		if story := guest.Must(t, "journalctl", "--no-pager", "-u", "shelldon-run@*"); !strings.Contains(story, "oom-kill") {
			t.Errorf("the journal of the sandboxed runs says no oom-kill:\n%s", story)
		}
	})

	t.Run("5 a parked approval survives a restart", func(t *testing.T) {
		api.SendText(ownerID, "one more file")
		ask := waitAsk(t, api, "restarted.txt")
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

	t.Run("6 core killed mid-turn is restarted, leaves no turn behind and answers the message", func(t *testing.T) {
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
		// The message the kill cut short is the owner's still: the new
		// core says so, and answers it.
		api.WaitMessage(t, ownerID, textHas("I was restarted before I could answer “this one will be cut short”"))
		api.WaitMessage(t, ownerID, textHas("answered after all"))
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

	t.Run("8 a voice note is heard and a photo seen", func(t *testing.T) {
		api.SendVoice(ownerID, telegramtest.Voice{Content: []byte("good night VM"), Duration: 1})
		reply := api.WaitMessage(t, ownerID, textHas("🎤 you said: good night VM"))
		if !strings.Contains(reply.Text, "Sleep well, owner.") {
			t.Errorf("the reply to the voice note is %q, want the words heard and the model's answer", reply.Text)
		}
		if got := model.Transcriptions(); len(got) != 1 || got[0].Model != "whisper-1" {
			t.Errorf("the transcription endpoint got %+v, want one call for whisper-1", got)
		}
		photo := testJPEG(t, 32, 32)
		api.SendPhoto(ownerID, "what is this?", telegramtest.Photo{Width: 32, Height: 32, Content: photo})
		api.WaitMessage(t, ownerID, textHas("A fine grey square."))
		reqs := model.Requests()
		last := reqs[len(reqs)-1].Messages
		if m := last[len(last)-1]; m.Content != "[photo: what is this?]" || len(m.Images) != 1 || !bytes.Equal(m.Images[0].Data, photo) {
			t.Errorf("the model got %q with %d images, want the placeholder and the photo", m.Content, len(m.Images))
		}
		if out, err := guest.Exec(ctx, "sh", "-c", "ls -A /var/lib/shelldon/photos 2>/dev/null | wc -l"); err != nil || strings.TrimSpace(string(out)) != "0" {
			t.Errorf("photos kept after the answer: %s %v", out, err)
		}
	})

	t.Run("9 a rule granted with Always runs its call without asking until revoked", func(t *testing.T) {
		api.SendText(ownerID, "stamp it")
		ask := waitAsk(t, api, "touch stamp.txt", "run_shell of exactly `touch stamp.txt`")
		tap(api, ask, "Always")
		api.WaitMessage(t, ownerID, textHas("Rule 1 kept"))
		api.WaitMessage(t, ownerID, textHas("Stamped."))
		api.SendText(ownerID, "stamp it again")
		api.WaitMessage(t, ownerID, textHas("Ran under rule 1 (run_shell of exactly `touch stamp.txt`)"))
		api.WaitMessage(t, ownerID, textHas("Stamped again."))
		api.SendText(ownerID, "/rules")
		api.WaitMessage(t, ownerID, textHas("used 1 time(s)"))
		api.SendText(ownerID, "/rules revoke 1")
		api.WaitMessage(t, ownerID, textHas("Rule 1 revoked"))
		api.SendText(ownerID, "stamp it once more")
		tap(api, waitAsk(t, api, "touch stamp.txt"), "Deny")
		api.WaitMessage(t, ownerID, textHas("Not stamped."))
		guest.Must(t, "sh", "-c", "journalctl SHELLDON_EVENT=rule | grep -q revoked")
	})

	t.Run("10 an MCP server configured by the owner answers in its container", func(t *testing.T) {
		checkMCPCall(t, pet, model)
	})

	t.Run("11 shelldon setup run without a terminal, then a reply that streams", func(t *testing.T) {
		checkSetupThenStreamedReply(t, pet, model)
	})
}

// checkSetupThenStreamedReply sets the pet up as an owner's script would
// on the board: `shelldon setup` with flags only (the bot token checked
// with getMe, a preset pointed at the scripted model with a key, checked
// with one completion, written 0600 beside the configuration, doctor
// run), the pet restarted on what it wrote; then the owner's message is
// answered as the model writes it: drafts that grow in the owner's chat,
// none showing a line meant for the pet, and the whole reply as a
// message of its own.
func checkSetupThenStreamedReply(t *testing.T, pet petInAVM, model *demomodel.Server) {
	ctx := context.Background()
	const key = "sk-vm-owner-key"
	for path, secret := range map[string]string{"/root/bot-token": botToken, "/root/openai-key": key} {
		if err := pet.guest.WriteFile(ctx, path, []byte(secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	model.Enqueue(demomodel.Step{Text: "ok"}) // setup's check of the provider
	out := pet.guest.Must(t, "shelldon", "setup",
		"--telegram-token-file", "/root/bot-token", "--telegram-api", fmt.Sprintf("http://%s:%d", vm.ForwardAddress, e2eBotAPIPort),
		"--provider", "openai", "--base-url", fmt.Sprintf("http://%s:%d/v1", vm.ForwardAddress, e2eModelPort),
		"--model", demomodel.ModelName, "--api-key-file", "/root/openai-key")
	for _, want := range []string{"@shelldon_test_bot", "ok   model provider", "ok   telegram         bot @shelldon_test_bot"} {
		if !strings.Contains(out, want) {
			t.Errorf("setup's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, key) || strings.Contains(out, botToken) {
		t.Errorf("setup's output shows a secret:\n%s", out)
	}
	for _, path := range []string{"/etc/shelldon/credentials/openai-api-key", "/etc/shelldon/telegram/token"} {
		if got := strings.TrimSpace(pet.guest.Must(t, "stat", "-c", "%a %U", path)); got != "600 root" {
			t.Errorf("%s: mode and owner %q, want 600 root", path, got)
		}
	}
	if got := strings.TrimSpace(pet.guest.Must(t, "cat", "/etc/shelldon/credentials/openai-api-key")); got != key {
		t.Errorf("the key file holds %q, want the key alone", got)
	}
	before := len(pet.api.Calls("setMyCommands"))
	pet.guest.Must(t, "systemctl", "restart", "shelldon-broker.service", "shelldon.service")
	waitFor(t, "the bot back", func() bool { return len(pet.api.Calls("setMyCommands")) > before })

	reply := "Streaming from the board: each word arrives as the model writes it, and the draft grows until the whole reply lands as a message of its own."
	model.Enqueue(demomodel.Step{Text: reply + "\nTHOUGHT: they can watch me think\nFACE: happy", Delay: 300 * time.Millisecond, ChunkDelay: 200 * time.Millisecond})
	drafts := len(pet.api.Drafts(ownerID))
	pet.api.SendText(ownerID, "stream me something")
	pet.api.WaitMessage(t, ownerID, textHas(reply))
	seen := pet.api.Drafts(ownerID)[drafts:]
	if len(seen) < 2 {
		t.Fatalf("%d drafts before the reply, want it to grow in several: %+v", len(seen), seen)
	}
	t.Logf("%d drafts grew before the reply", len(seen))
	for i, d := range seen {
		if !strings.HasPrefix(reply, strings.TrimSpace(d.Text)) {
			t.Errorf("draft %d %q is not the start of the reply", i, d.Text)
		}
		if i > 0 && len(d.Text) <= len(seen[i-1].Text) {
			t.Errorf("draft %d %q does not grow on %q", i, d.Text, seen[i-1].Text)
		}
	}
	reqs := model.Requests()
	if last := reqs[len(reqs)-1]; !last.Stream || last.Key != key {
		t.Errorf("the turn's request: stream %v, key %q; want a streamed request with the key setup wrote", last.Stream, last.Key)
	}
}

// checkMCPCall configures the example MCP server as an owner would (its
// static binary in a directory of its own, an [[mcp]] table, core
// restarted): doctor starts it in its container and lists its tools,
// and a call of its read-only tool runs without asking, its answer
// reaching the model fenced as untrusted.
func checkMCPCall(t *testing.T, pet petInAVM, model *demomodel.Server) {
	ctx := context.Background()
	binary, err := os.ReadFile(filepath.Join(mcptest.Build(t, "shelldon/cmd/shelldon-demo-mcp", demoMCPBinary), demoMCPBinary))
	if err != nil {
		t.Fatal(err)
	}
	pet.guest.Must(t, "mkdir", "-p", "/opt/mcp/demo")
	if err := pet.guest.WriteFile(ctx, "/opt/mcp/demo/"+demoMCPBinary, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	table := fmt.Sprintf("\n[[mcp]]\nname = %q\ndirectory = \"/opt/mcp/demo\"\ncommand = %q\ntools = [%q, %q]\nread_only = [%q]\n",
		phrases.MCPServer, config.MCPDirectory+"/"+demoMCPBinary, phrases.MCPReadOnlyTool, phrases.MCPAskingTool, phrases.MCPReadOnlyTool)
	pet.guest.Must(t, "sh", "-c", "cat >> /etc/shelldon/shelldon.toml <<'EOF'"+table+"EOF")
	before := len(pet.api.Calls("setMyCommands"))
	pet.guest.Must(t, "systemctl", "restart", "shelldon.service")
	waitFor(t, "the bot back", func() bool { return len(pet.api.Calls("setMyCommands")) > before })

	out, _ := pet.guest.Exec(ctx, "shelldon", "doctor")
	if !strings.Contains(string(out), "ok   mcp demo") || !strings.Contains(string(out), "offers count_letters, shout") {
		t.Errorf("doctor on the MCP server:\n%s", out)
	}
	waitFor(t, "core's MCP server listed its tools", func() bool {
		_, err := pet.guest.Exec(ctx, "sh", "-c", "journalctl -u shelldon.service | grep -q 'MCP server started'")
		return err == nil
	})
	pet.api.SendText(ownerID, "count the letters in hello VM")
	pet.api.WaitMessage(t, ownerID, textHas("Counted in its container."))
	if got := toolAnswer(model.Requests(), "m1"); !strings.Contains(got, "7 letters, 2 words") || !strings.Contains(got, "UNTRUSTED DATA from the MCP server demo") {
		t.Errorf("the MCP call answered the model %q; want the server's count, fenced as untrusted", got)
	}
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
