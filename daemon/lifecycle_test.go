package daemon

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
)

func TestArbiterAdmitsOneAndCoalescesTheRest(t *testing.T) {
	var a arbiter
	adm, now := a.submit("first", Origin{Transport: "cli"})
	if !now || adm.Text != "first" || adm.CatchUp {
		t.Fatalf("submit(first) = %+v, %v; want it admitted at once", adm, now)
	}
	for i := range 3 {
		if _, now := a.submit(fmt.Sprintf("m%d", i), Origin{Transport: "tg", Chat: "7"}); now {
			t.Fatalf("submit(m%d) admitted a second turn while one runs", i)
		}
	}
	next, ok := a.complete()
	if !ok || next.Text != "m0\nm1\nm2" || !next.CatchUp || next.Origin.Chat != "7" {
		t.Fatalf("complete() = %+v, %v; want one catch-up turn of all pending texts", next, ok)
	}
	if _, now := a.submit("during catch-up", Origin{}); now {
		t.Fatal("the catch-up turn must hold the slot")
	}
	if next, ok := a.complete(); !ok || next.Text != "during catch-up" {
		t.Fatalf("complete() = %+v, %v", next, ok)
	}
	if _, ok := a.complete(); ok {
		t.Fatal("complete() with nothing pending returned a turn")
	}
	if _, now := a.submit("later", Origin{}); !now {
		t.Fatal("a free arbiter did not admit a message")
	}
}

func TestFence(t *testing.T) {
	var f fence
	if f.accept("") || f.accept("a") {
		t.Fatal("a fence with no open turn accepted a result")
	}
	f.open("a")
	if !f.accept("a") || f.accept("b") || f.accept("") {
		t.Fatal("the fence must accept exactly the open turn")
	}
	if !f.close("a") {
		t.Fatal("close(open turn) = false")
	}
	if f.close("a") || f.accept("a") {
		t.Fatal("closing twice must be a no-op, and a closed turn is refused")
	}
	if !f.wasClosed("a") || f.wasClosed("zz") {
		t.Fatal("wasClosed does not remember the closed turn")
	}
	for i := range closedMemory + 1 {
		id := fmt.Sprint(i)
		f.open(id)
		f.close(id)
	}
	if f.wasClosed("0") || !f.wasClosed(fmt.Sprint(closedMemory)) {
		t.Fatal("the closed set is not bounded to the most recent ids")
	}
}

func TestPresenceDwellAndDedup(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	var pushed []string
	p := &presence{clock: clk, dwell: 60 * time.Second, push: func(s contracts.Snapshot) {
		pushed = append(pushed, s.Face+"/"+s.Caption)
	}}
	p.show("thinking", "(?)", "…")
	p.show("thinking", "(?)", "…") // identical: not sent again
	p.react("happy", "(^_^)", "yay")
	if p.ambient("bored", "(-_-)", "meh") {
		t.Error("an ambient face replaced a reaction inside its dwell")
	}
	clk.Advance(59 * time.Second)
	if p.ambient("bored", "(-_-)", "meh") {
		t.Error("an ambient face replaced a reaction 1s before the dwell ended")
	}
	clk.Advance(time.Second)
	if !p.ambient("bored", "(-_-)", "meh") {
		t.Error("the ambient face was held after the dwell")
	}
	p.react("happy", "(^_^)", "yay")
	p.show("thinking", "(?)", "…") // a new turn shows at once, dwell or not
	want := "thinking/…|happy/yay|bored/meh|happy/yay|thinking/…"
	if got := strings.Join(pushed, "|"); got != want {
		t.Errorf("pushes = %s, want %s", got, want)
	}
	if cur := p.current(); cur.Face != "thinking" {
		t.Errorf("current() = %+v, want thinking", cur)
	}
}

func TestWorkerEnvKeepsNoSecrets(t *testing.T) {
	got := workerEnv([]string{
		"PATH=/usr/bin", "LANG=C.UTF-8", "LC_TIME=de_DE", "SHELLDON_TEST_MAIN=1",
		"SHELLDON_PROVIDER_KEY=sk-secret", "CREDENTIALS_DIRECTORY=/run/credentials/shelldon.service",
		"OPENAI_API_KEY=sk-other", "SHELLDON_STATE_DIR=/var/lib/shelldon", "NOTIFY_SOCKET=/run/systemd/notify",
	})
	want := []string{"PATH=/usr/bin", "LANG=C.UTF-8", "LC_TIME=de_DE", "SHELLDON_TEST_MAIN=1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("workerEnv(...) = %q, want %q", got, want)
	}
}
