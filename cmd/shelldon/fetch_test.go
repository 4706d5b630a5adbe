package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/demomodel"
)

// TestRefusedHTTPGetIsLoggedAndExplained: the model asks http_get for a
// loopback address — once by its IP, refused before the owner is asked,
// and once by a name the owner approves that leads there, refused when
// core dials it. Neither fetches; each refusal is in the audit log for the
// owner, and the model is told it was refused on purpose and why, so it
// can explain.
func TestRefusedHTTPGetIsLoggedAndExplained(t *testing.T) {
	fetched := make(chan string, 4)
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched <- r.URL.Path
		w.Write([]byte("the router's admin page"))
	}))
	t.Cleanup(secret.Close)
	_, port, _ := net.SplitHostPort(secret.Listener.Addr().String())
	byIP := "http://127.0.0.1:" + port + "/admin"
	byName := "http://localhost:" + port + "/admin"
	model := demomodel.New(
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "g1", Name: "http_get", Args: `{"url": "` + byIP + `"}`}}},
		demomodel.Step{Text: "That address was refused."},
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "g2", Name: "http_get", Args: `{"url": "` + byName + `"}`}}},
		demomodel.Step{Text: "That one was refused too."},
	)
	p := newPet(t, model)

	p.say("fetch my router's admin page")
	if r := p.reply(15 * time.Second); r.Text != "That address was refused." {
		t.Fatalf("reply = %+v", r)
	}
	first := p.waitTurns(1)[0].ID
	told := toolAnswer(p.waitRequests(2), "g1")
	for _, want := range []string{"refused", "logged for the owner", "127.0.0.1 is loopback"} {
		if !strings.Contains(told, want) {
			t.Errorf("the model was told %q of the refused http_get, want it to say %q", told, want)
		}
	}

	p.say("then by its name")
	p.reply(15 * time.Second)
	req := p.approval(5 * time.Second)
	p.waitTurns(2)
	p.decide(req.Turn, true)
	if r := p.reply(15 * time.Second); r.Text != "That one was refused too." {
		t.Fatalf("reply after approve = %+v", r)
	}
	told = toolAnswer(p.waitRequests(4), "g2")
	for _, want := range []string{"refused", "logged for the owner", "127.0.0.1 is loopback"} {
		if !strings.Contains(told, want) {
			t.Errorf("the model was told %q of the approved http_get to a loopback name, want it to say %q", told, want)
		}
	}

	var audited []string
	for _, line := range strings.Split(p.logs.String(), "\n") {
		if strings.Contains(line, "event="+contracts.EventHTTPGet) && strings.Contains(line, "decision=refused") {
			audited = append(audited, line)
		}
	}
	if len(audited) != 2 ||
		!strings.Contains(audited[0], byIP) || !strings.Contains(audited[0], "turn="+first) ||
		!strings.Contains(audited[1], byName) || !strings.Contains(audited[1], "turn="+req.Turn) ||
		!strings.Contains(audited[1], "127.0.0.1 is loopback") {
		t.Errorf("audit lines of refused http_gets = %q, want one for %s in turn %s and one for %s (dialled 127.0.0.1, loopback) in turn %s",
			audited, byIP, first, byName, req.Turn)
	}
	select {
	case path := <-fetched:
		t.Errorf("the loopback server was fetched (%s)", path)
	default:
	}
}
