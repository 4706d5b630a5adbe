package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/launch"
)

// TestCoreShowsTheStepsOfATurn: a worker's steps reach the transport the
// turn came from as progress lines in core's words, from core's own check
// of the call; steps core will not word (an unknown tool, a call that
// needs the sandbox, which core sees through EXEC) are dropped; the line
// settles after the reply; and a turn without steps shows no progress.
func TestCoreShowsTheStepsOfATurn(t *testing.T) {
	var socket string
	h := startCore(t, inProcessLauncher{work: func(ctx context.Context, spec launch.Spec) {
		conn, in, err := joinAsWorker(ctx, socket, turnOf(spec))
		if err != nil {
			return
		}
		defer conn.Close()
		if in.Text == "read my notes" {
			for _, call := range []contracts.ToolCall{
				{ID: "1", Name: "format_disk", Args: `{}`},
				{ID: "2", Name: "run_shell", Args: `{"command":"ls"}`},
				{ID: "3", Name: "read_file", Args: `{"path":"notes.md"}`},
			} {
				env, _ := contracts.NewEnvelope(contracts.KindStep, turnOf(spec), contracts.Step{Call: call})
				conn.Send(env)
			}
		}
		sendResult(conn, turnOf(spec), "answer to "+in.Text)
	}}, 5*time.Second)
	socket = h.cfg.Socket
	seen := make(chan contracts.Envelope, 64)
	conn := listen(t, h.cfg.Socket, contracts.RoleTransport, func(env contracts.Envelope) {
		switch env.Kind {
		case contracts.KindProgress, contracts.KindOutbound, contracts.KindActivity:
			seen <- env
		}
	})
	say := func(text string) {
		env, _ := contracts.NewEnvelope(contracts.KindInbound, "", contracts.Inbound{Chat: "42", Text: text})
		if err := conn.Send(env); err != nil {
			t.Fatal(err)
		}
	}
	// what collects a turn's envelopes, as "kind line", until it is over.
	// A reply is taken once by its key, as a transport does (core sends a
	// reply again until its transport confirms it, which this one never
	// does).
	taken := map[string]bool{}
	what := func() []string {
		var got []string
		for {
			env := within(t, seen, "the turn's envelopes")
			switch env.Kind {
			case contracts.KindActivity:
				var a contracts.Activity
				env.Decode(&a)
				if !a.Busy {
					return got
				}
			case contracts.KindOutbound:
				var out contracts.Outbound
				env.Decode(&out)
				if taken[out.Key] {
					continue
				}
				taken[out.Key] = true
				got = append(got, "reply "+out.Text)
			case contracts.KindProgress:
				var p contracts.Progress
				env.Decode(&p)
				if p.Chat != "42" || p.Turn != env.Turn || p.Turn == "" {
					t.Errorf("progress %+v of envelope turn %q, want chat 42 and the turn's id", p, env.Turn)
				}
				line := "progress " + p.Line
				if p.Settled {
					line = "settled " + p.Line
				}
				got = append(got, line)
			}
		}
	}
	say("read my notes")
	want := []string{"progress reading notes.md…", "reply answer to read my notes", "settled done (1 step)"}
	if got := what(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("a turn with a step showed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	say("hello")
	if got := what(); strings.Join(got, "\n") != "reply answer to hello" {
		t.Errorf("a turn without steps showed\n%s\nwant only its reply", strings.Join(got, "\n"))
	}
}
