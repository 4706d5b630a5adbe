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
