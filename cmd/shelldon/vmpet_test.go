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

	"shelldon/daemon/telegram/telegramtest"
	"shelldon/demomodel"
	"shelldon/sandbox/image"
	"shelldon/testhost/vm"
)

// Guest ports on vm.ForwardAddress that lead to the test's servers.
const (
	e2eBotAPIPort = 8081
	e2eModelPort  = 8082
)

// petInAVM is the pet installed from its .deb on a booted test VM, its
// three services running and its bot connected to a local Bot API server.
type petInAVM struct {
	guest *vm.VM
	api   *telegramtest.Server
}

// bootPet boots a VM with deb installed and the sandbox image in place,
// configures the pet to talk to model and to a fresh Bot API server on
// this machine, enables its services and waits for the bot to connect.
func bootPet(t testing.TB, sandboxImage image.Image, deb string, model http.Handler) petInAVM {
	t.Helper()
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
	deadline := time.Now().Add(2 * time.Minute)
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
	deadline := time.Now().Add(2 * time.Minute)
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
