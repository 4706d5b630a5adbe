package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"shelldon/config"
	"shelldon/demomodel"
)

func TestWorkerCrashDegradesAndFreesTheSlot(t *testing.T) {
	model := demomodel.New(demomodel.Step{Text: "never seen"}, demomodel.Step{Text: "fine now"})
	p := newPet(t, model, func(c *config.Config) {
		// A worker that dies at once, without a word.
		c.Turn.WorkerCommand = []string{"/bin/sh", "-c", "exit 3", "shelldon-worker"}
	})
	p.say("crash, please")
	if r := p.reply(10 * time.Second); !r.Degraded {
		t.Fatalf("reply = %+v, want the degrade answer", r)
	}
	turns := p.waitTurns(1)
	if turns[0].Outcome != "crashed" || !strings.Contains(turns[0].Error, "exit-code 3") {
		t.Errorf("turn = %+v, want crashed with exit-code 3", turns[0])
	}
}

// killWorker kills (kill -9) the worker of the one turn running.
func (p *pet) killWorker() {
	p.t.Helper()
	turns := p.turns()
	if len(turns) != 1 || turns[0].WorkerPID == 0 {
		p.t.Fatalf("turns = %+v, want one running turn with a worker pid", turns)
	}
	if err := syscall.Kill(turns[0].WorkerPID, syscall.SIGKILL); err != nil {
		p.t.Fatalf("kill worker: %v", err)
	}
}

func TestKilledWorkerDegradesAndNextMessageGetsATurn(t *testing.T) {
	model := demomodel.New(demomodel.Step{Hang: true}, demomodel.Step{Text: "recovered"})
	p := newPet(t, model)
	p.say("think hard")
	p.waitRequests(1)
	p.killWorker()
	if r := p.reply(5 * time.Second); !r.Degraded {
		t.Fatalf("reply = %+v, want the degrade answer", r)
	}
	if got := p.waitTurns(1)[0]; got.Outcome != "crashed" || !strings.Contains(got.Error, "signal 9") || got.WorkerExit != "signal" {
		t.Errorf("turn = %+v, want crashed by signal 9", got)
	}
	p.say("are you ok?")
	if r := p.reply(10 * time.Second); r.Text != "recovered" {
		t.Fatalf("reply after the kill = %+v", r)
	}
}

func TestSpawnFailureFreesTheArbiter(t *testing.T) {
	model := demomodel.New()
	p := newPet(t, model, func(c *config.Config) {
		c.Turn.WorkerCommand = []string{filepath.Join(t.TempDir(), "no-such-worker")}
	})
	for _, msg := range []string{"one", "two"} {
		p.say(msg)
		if r := p.reply(5 * time.Second); !r.Degraded {
			t.Fatalf("reply to %q = %+v, want the degrade answer", msg, r)
		}
	}
	turns := p.waitTurns(2)
	for _, tr := range turns {
		if tr.Outcome != "spawn-failed" {
			t.Errorf("turn %+v, want spawn-failed", tr)
		}
	}
	if model.Hits() != 0 {
		t.Errorf("the model was asked %d times with no worker running", model.Hits())
	}
}

func TestRepliesAreParsedAndOpsApplied(t *testing.T) {
	model := demomodel.New(
		demomodel.Step{Text: "<think>secret plan\n```ops\n[{\"op\":\"remember\",\"text\":\"leak\"}]\n```\nFACE: sad</think>Noted!\n" +
			"```ops\n[{\"op\":\"remember\",\"topic\":\"coffee\",\"text\":\"loves hazelnut\"}," +
			"{\"op\":\"rewrite_about\",\"text\":\"\"}," + // invalid: skipped and said, the others still apply
			"{\"op\":\"add_face\",\"name\":\"smug\",\"glyphs\":\"(¬‿¬)\"}]\n```\nTHOUGHT: hazelnut!\nFACE: curious"},
		demomodel.Step{Text: "Hmm.\n```ops\n[{\"op\":\"delete_everything\"}]\n```\nFACE: smug"},
		demomodel.Step{Text: "Sure.\nFACE: no-such-face"},
	)
	p := newPet(t, model)
	p.say("remember I love hazelnut coffee")
	r := p.reply(15 * time.Second)
	if r.Text != "Noted!" {
		t.Fatalf("reply = %q, want the payload without think, ops and control lines", r.Text)
	}
	if r := p.reply(15 * time.Second); !strings.Contains(r.Text, "1 of the 1 rewrite_about op(s) I proposed could not be applied: invalid op rewrite_about: text is empty") {
		t.Errorf("after the reply the owner read %q, want why the invalid op was skipped", r.Text)
	}
	p.waitTurns(1)
	memory := filepath.Join(p.cfg.StateDir, "memory")
	raw, err := os.ReadFile(filepath.Join(memory, "coffee.md"))
	if err != nil || !strings.Contains(string(raw), "loves hazelnut") {
		t.Errorf("memory/coffee.md = %q, %v; want the remembered note", raw, err)
	}
	if _, err := os.Stat(filepath.Join(memory, "notes.md")); err == nil {
		t.Error("the op inside <think> was applied")
	}
	p.waitFace("curious", 5*time.Second)

	// The face added by the last turn is there for this one; the
	// malformed ops block is rejected whole and left visible.
	p.say("forget everything")
	r = p.reply(15 * time.Second)
	if !strings.Contains(r.Text, "delete_everything") || !strings.HasPrefix(r.Text, "Hmm.") {
		t.Errorf("reply = %q, want the malformed ops block left visible", r.Text)
	}
	p.waitTurns(2)
	p.waitFace("smug", 5*time.Second)

	p.say("ok")
	p.reply(15 * time.Second)
	p.waitTurns(3)
	p.waitFace("happy", 5*time.Second)
}

func TestProviderFallbackAndRetry(t *testing.T) {
	failing := demomodel.New(
		demomodel.Step{Status: 503, Error: "overloaded"},
		demomodel.Step{Status: 503, Error: "still overloaded"},
	)
	failingURL := serve(t, failing)
	model := demomodel.New(demomodel.Step{Text: "from the backup"})
	p := newPet(t, model, func(c *config.Config) {
		c.Providers = append([]config.Provider{{Name: "primary", BaseURL: failingURL, Model: "m"}}, c.Providers...)
	})
	p.say("hello")
	if r := p.reply(15 * time.Second); r.Text != "from the backup" {
		t.Fatalf("reply = %+v, want the second provider's answer", r)
	}
	if failing.Hits() != 2 {
		t.Errorf("primary was tried %d times, want 2 (one retry)", failing.Hits())
	}
}

// TestAModelThatCannotCallToolsIsToldToTheOwner: a provider whose model
// refuses tools (Ollama's words for a model without them) leaves the turn
// without an answer; the owner reads why, with the model and the fix,
// not only that the pet cannot think. An outage says nothing of the kind.
func TestAModelThatCannotCallToolsIsToldToTheOwner(t *testing.T) {
	model := demomodel.New(
		demomodel.Step{Status: 400, Error: "registry.ollama.ai/library/gemma:2b does not support tools"},
		demomodel.Step{Status: 503, Error: "overloaded"},
		demomodel.Step{Status: 503, Error: "overloaded"},
	)
	p := newPet(t, model)
	p.say("hello")
	r := p.reply(30 * time.Second)
	if !strings.Contains(r.Text, "can't think right now") || !strings.Contains(r.Text, "cannot call tools") || !strings.Contains(r.Text, "qwen2.5") {
		t.Fatalf("the owner read %q; want the degrade, why (a model that cannot call tools) and the fix", r.Text)
	}
	p.say("again")
	if r := p.reply(30 * time.Second); strings.Contains(r.Text, "needs you") {
		t.Errorf("after an outage the owner read %q; want no word of fixing the model", r.Text)
	}
}
