package daemon

import (
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
)

func TestPresenceDwellAndDedup(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	var pushed []string
	p := &presence{clock: clk, dwell: 60 * time.Second, push: func(s contracts.Snapshot) {
		pushed = append(pushed, s.Face+"/"+s.Caption)
	}}
	p.thinking()
	p.thinking() // identical: not sent again
	p.replied("happy", "yay")
	if p.idle("bored") {
		t.Error("an idle face replaced a reaction inside its dwell")
	}
	clk.Advance(59 * time.Second)
	if p.idle("bored") {
		t.Error("an idle face replaced a reaction 1s before the dwell ended")
	}
	clk.Advance(time.Second)
	if !p.idle("bored") {
		t.Error("the idle face was held after the dwell")
	}
	p.failed()
	p.thinking() // a new turn shows at once, dwell or not
	want := "thinking/let me think…|happy/yay|bored/anyone there?|cant-think/can't think right now|thinking/let me think…"
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
	want := []string{"PATH=/usr/bin", "LANG=C.UTF-8", "LC_TIME=de_DE", "SHELLDON_TEST_MAIN=1", "GOMAXPROCS=1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("workerEnv(...) = %q, want %q", got, want)
	}
}

// TestWorkerRunsOnOneProcessorUnlessTold: a worker gets GOMAXPROCS=1 when
// core's environment sets none, and core's own when it does.
func TestWorkerRunsOnOneProcessorUnlessTold(t *testing.T) {
	for _, tc := range []struct{ environ, want []string }{
		{[]string{"PATH=/usr/bin"}, []string{"PATH=/usr/bin", "GOMAXPROCS=1"}},
		{[]string{"GOMAXPROCS=4", "PATH=/usr/bin"}, []string{"GOMAXPROCS=4", "PATH=/usr/bin"}},
	} {
		if got := workerEnv(tc.environ); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("workerEnv(%q) = %q, want %q", tc.environ, got, tc.want)
		}
	}
}
