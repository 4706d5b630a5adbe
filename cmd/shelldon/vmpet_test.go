package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"shelldon/daemon/driver"
	"shelldon/daemon/owner"
	"shelldon/demomodel"
	"shelldon/sandbox/image"
	"shelldon/testhost/vm"
	"shelldon/transports/telegram/telegramtest"
	"shelldon/worker"
)

// Guest ports on vm.ForwardAddress that lead to the test's servers.
const (
	e2eBotAPIPort = 8081
	e2eModelPort  = 8082
)

// guestWait bounds each wait for what the guest does in its own time:
// generous, for an emulated CPU (the arm64 guest's every instruction is
// translated), and only ever reached when something is wrong.
const guestWait = 5 * time.Minute

// replyWait is how long the suites wait for each of the pet's messages,
// by the guest's architecture: under TCG an x86 turn takes seconds, an
// arm64 one on the board's Cortex-A53 several times as long.
var replyWait = map[string]time.Duration{"amd64": 90 * time.Second, "arm64": 4 * time.Minute}

// petInAVM is the pet installed from its .deb on a booted test VM, its
// three services running and its bot connected to a local Bot API server.
type petInAVM struct {
	guest *vm.VM
	api   *telegramtest.Server
}

// bootPet boots a VM of the Debian architecture arch with deb (of the
// same architecture) installed and the sandbox image (also) in place,
// configures the pet to talk to model and to a fresh Bot API server on
// this machine, enables its services and waits for the bot to connect.
func bootPet(t testing.TB, arch string, sandboxImage image.Image, deb string, model http.Handler) petInAVM {
	t.Helper()
	if sandboxImage.Arch != arch || !strings.HasSuffix(deb, "_"+arch+".deb") {
		t.Fatalf("bootPet(%s): the sandbox image is for %s and the .deb is %s; want both for %s", arch, sandboxImage.Arch, deb, arch)
	}
	modelServer := httptest.NewServer(model)
	t.Cleanup(modelServer.Close)
	api := telegramtest.New(t, botToken)
	api.SetWaitLimit(replyWait[arch])
	guest := vm.Boot(t, vm.Options{
		Arch:    arch,
		Debs:    []string{deb},
		Trees:   []string{sandboxImage.Dir},
		Forward: map[int]int{e2eBotAPIPort: urlPort(t, api.URL()), e2eModelPort: urlPort(t, modelServer.URL)},
	})
	ctx := context.Background()
	config := fmt.Sprintf(`[[provider]]
name = "demo"
base_url = "http://%[1]s:%[2]d/v1"
model = %[3]q
vision = true
transcription_model = "whisper-1"
price_prompt_per_million = 2
price_completion_per_million = 10

[budget]
currency = "USD"

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
	// Nothing can work without the bot: fail at once, with the story.
	deadline := time.Now().Add(guestWait)
	for !strings.Contains(journal(), "telegram: connected") {
		if time.Now().After(deadline) {
			t.Fatalf("the bot never connected; the guest's journal:\n%s", journal())
		}
		time.Sleep(time.Second)
	}
	return petInAVM{guest: guest, api: api}
}

func urlPort(t testing.TB, raw string) int {
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
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(guestWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain: %s", what)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitAsk waits for the message that asks the owner about something,
// buttons and all, whose text mentions every one of words.
func waitAsk(t testing.TB, api *telegramtest.Server, words ...string) telegramtest.Message {
	t.Helper()
	return api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool {
		if len(m.Keyboard) == 0 {
			return false
		}
		for _, w := range words {
			if !strings.Contains(m.Text, w) {
				return false
			}
		}
		return true
	})
}

// guestTurns reads the newest n turns from the guest's `shelldon turns --json`.
func guestTurns(t testing.TB, guest *vm.VM, n int) []turnJSON {
	t.Helper()
	var turns []turnJSON
	out := strings.TrimSpace(guest.Must(t, "shelldon", "turns", "--json", "-n", strconv.Itoa(n)))
	for line := range strings.SplitSeq(out, "\n") {
		var j turnJSON
		if err := json.Unmarshal([]byte(line), &j); err != nil {
			t.Fatalf("shelldon turns --json in the guest: %q: %v", line, err)
		}
		turns = append(turns, j)
	}
	return turns
}

// The steps both VM suites take (the x86 one, TestWholePetInAVM, and the
// board's, TestBoardPetInAnArm64VM), each sending the owner's messages and
// waiting for the answers the suite's scripted model gives.

// checkServicesAndDoctor waits for the three services and the bot, and
// has `shelldon doctor` find everything in order but the panel's SPI
// header, which no VM has.
func checkServicesAndDoctor(t *testing.T, pet petInAVM) {
	ctx := context.Background()
	for _, unit := range []string{"shelldon.service", "shelldon-broker.service", "shelldon-panel.service"} {
		waitFor(t, fmt.Sprintf("%s active", unit), func() bool {
			out, _ := pet.guest.Exec(ctx, "systemctl", "is-active", unit)
			return strings.TrimSpace(string(out)) == "active"
		})
	}
	// The bot is up once it registered its commands.
	pet.api.WaitCall(t, "setMyCommands", nil)
	out, err := pet.guest.Exec(ctx, "shelldon", "doctor")
	if err != nil {
		t.Errorf("shelldon doctor: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "ok") && line != "" && !strings.Contains(line, "SPI (panel)") {
			t.Errorf("doctor: %s", line)
		}
	}
}

// checkStateAccess looks at the installed pet's state directory: each
// role reads what it needs and no more. The panel's user, in the state
// directory's group, reads neither the memory tree nor about.md nor the
// workspace; the workers' user reads about.md and the workspace, never
// the memory tree.
func checkStateAccess(t *testing.T, pet petInAVM) {
	ctx := context.Background()
	const state = "/var/lib/shelldon"
	for path, want := range map[string]string{
		state: "710 root shelldon", state + "/workspace": "2750 root shelldon-worker", state + "/about.md": "640 root shelldon-worker",
		state + "/memory": "700 root shelldon", state + "/vault": "700 root shelldon", // core's group, which 0700 gives nothing
	} {
		if got := strings.TrimSpace(pet.guest.Must(t, "stat", "-c", "%a %U %G", path)); got != want {
			t.Errorf("%s is %q, want %q", path, got, want)
		}
	}
	for _, tt := range []struct {
		user  string
		argv  []string
		reads bool
	}{
		{"shelldon-panel", []string{"ls", state + "/memory"}, false},
		{"shelldon-panel", []string{"cat", state + "/about.md"}, false},
		{"shelldon-panel", []string{"ls", state + "/workspace"}, false},
		{"shelldon-broker", []string{"ls", state + "/workspace"}, false},
		{"shelldon-worker", []string{"ls", state + "/memory"}, false},
		{"shelldon-worker", []string{"cat", state + "/about.md"}, true},
		{"shelldon-worker", []string{"ls", state + "/workspace"}, true},
	} {
		out, err := pet.guest.Exec(ctx, append([]string{"runuser", "-u", tt.user, "--"}, tt.argv...)...)
		if (err == nil) != tt.reads {
			t.Errorf("%s: %q: %v %s; want it to read: %v", tt.user, tt.argv, err, out, tt.reads)
		}
	}
}

// checkSandboxUser has a command in the installed pet's sandbox say who it
// is on the host: its container's root is shelldon-sandbox, never root
// (its uid_map maps root to that user alone); and what an approved
// command made, applied, belongs to the workspace's owner and the
// workers' group.
func checkSandboxUser(t *testing.T, pet petInAVM, made string) {
	uid := strings.TrimSpace(pet.guest.Must(t, "id", "-u", "shelldon-sandbox"))
	// The command's output comes first, then the run's summary.
	out, _, _ := strings.Cut(pet.guest.Must(t, "shelldon", "sandbox", "run", "--", "cat", "/proc/self/uid_map"), "\n")
	if got, want := strings.Join(strings.Fields(out), " "), "0 "+uid+" 1"; got != want || uid == "0" {
		t.Errorf("a sandboxed command's uid_map is %q, want %q: its root shelldon-sandbox alone", got, want)
	}
	if got := strings.TrimSpace(pet.guest.Must(t, "stat", "-c", "%U %G", "/var/lib/shelldon/workspace/"+made)); got != "root shelldon-worker" {
		t.Errorf("%s, made by an approved command, is %q, want root shelldon-worker", made, got)
	}
}

// checkFirstTurn sends the pet's first message and waits for the model's
// answer (its first line), then for /status to count what the turn cost
// as the model counted it: today's tokens per provider, with the
// estimate at the configured price.
func checkFirstTurn(t *testing.T, pet petInAVM, model *demomodel.Server, message, answer string) {
	pet.api.SendText(ownerID, message)
	firstLine, _, _ := strings.Cut(answer, "\n")
	pet.api.WaitMessage(t, ownerID, textHas(firstLine))
	used := demoTokens(model.Requests()[0], len(answer))
	cost := owner.Cost((float64(used.PromptTokens)*2+float64(used.CompletionTokens)*10)/1e6, "USD")
	// The reply goes out before the turn has ended and its tokens are
	// counted, so /status is asked again until the turn is in it.
	today := textHas(fmt.Sprintf("Today: %[1]d+%[2]d — demo %[1]d+%[2]d ≈ %[3]s.", used.PromptTokens, used.CompletionTokens, cost))
	waitFor(t, "/status to count the first turn's tokens", func() bool {
		for _, m := range pet.api.Messages(ownerID) {
			if today(m) {
				return true
			}
		}
		pet.api.SendText(ownerID, "/status")
		time.Sleep(2 * time.Second)
		return false
	})
}

// checkApprovedCommand sends message, for which the model runs a RISKY
// command writing content to file in the workspace; the owner approves
// it, the model's answer comes, and the sandboxed command's file is in
// the guest's workspace.
func checkApprovedCommand(t *testing.T, pet petInAVM, message, file, content, answer string) {
	pet.api.SendText(ownerID, message)
	tap(pet.api, waitAsk(t, pet.api, file), "Approve")
	pet.api.WaitMessage(t, ownerID, textHas(answer))
	if got, err := pet.guest.ReadFile(context.Background(), "/var/lib/shelldon/workspace/"+file); err != nil || string(got) != content {
		t.Errorf("%s = %q, %v; want %q", file, got, err, content)
	}
}

// checkTurnStory sends message, whose answer the model delays: the turn
// is caught running in its transient unit, whose `systemctl status`
// shows its MemoryMax, and once answered, `journalctl SHELLDON_TURN=<id>`
// tells its story from start to end, the worker's lines included.
func checkTurnStory(t *testing.T, pet petInAVM, message, answer string) {
	ctx := context.Background()
	pet.api.SendText(ownerID, message)
	var unit string
	waitFor(t, "the turn's unit", func() bool {
		out, _ := pet.guest.Exec(ctx, "systemctl", "list-units", "--no-legend", "--plain", "--state=running", "shelldon-turn@*")
		fields := strings.Fields(string(out))
		if len(fields) > 0 {
			unit = fields[0]
		}
		return unit != ""
	})
	out, _ := pet.guest.Exec(ctx, "systemctl", "status", "--no-pager", unit)
	if status := string(out); !strings.Contains(status, "Memory:") || !strings.Contains(status, "max: 256.0M") {
		t.Errorf("systemctl status %s shows no MemoryMax:\n%s", unit, status)
	}
	pet.api.WaitMessage(t, ownerID, textHas(answer))
	turn := strings.TrimSuffix(strings.TrimPrefix(unit, "shelldon-turn@"), ".service")
	story := pet.guest.Must(t, "journalctl", "--no-pager", "-o", "json", "SHELLDON_TURN="+turn)
	for _, want := range []string{`"SHELLDON_EVENT":"turn-start"`, `"SHELLDON_EVENT":"turn-end"`, `"SYSLOG_IDENTIFIER":"shelldon-worker"`} {
		if !strings.Contains(story, want) {
			t.Errorf("journalctl SHELLDON_TURN=%s lacks %s", turn, want)
		}
	}
}

// checkWorkerOOMKilled sends the test hooks' message that makes the
// turn's worker grow past its MemoryMax: the kernel kills it, the owner
// hears the degraded answer (the model is asked nothing), the turn's
// record and journal say oom-kill, and the next message, then, gets the
// model's answer.
func checkWorkerOOMKilled(t *testing.T, pet petInAVM, then, answer string) {
	pet.api.SendText(ownerID, worker.HogMessage)
	pet.api.WaitMessage(t, ownerID, textHas(driver.DegradeText))
	last := guestTurns(t, pet.guest, 1)
	if len(last) != 1 || last[0].WorkerResult != "oom-kill" {
		t.Fatalf("shelldon turns records %+v, want the last turn's worker oom-killed", last)
	}
	unit := "shelldon-turn@" + last[0].ID + ".service"
	if story := pet.guest.Must(t, "journalctl", "--no-pager", "-u", unit); !strings.Contains(story, "oom-kill") {
		t.Errorf("the journal of %s says no oom-kill:\n%s", unit, story)
	}
	pet.api.SendText(ownerID, then)
	pet.api.WaitMessage(t, ownerID, textHas(answer))
}
