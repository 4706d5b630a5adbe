package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"shelldon/daemon/statedir"
	"shelldon/demomodel"
)

// TestAFloodOfOpsIsRefusedWhole: one reply carries 5,600 remember ops, each
// to a topic of its own. None is applied — the batch is refused whole, not
// a prefix of it — the owner and the model read why in the reply, and
// core's loop answers /status at once rather than after 5,600 files
// written and flushed (how long it took is logged: timed tests assert no
// performance).
func TestAFloodOfOpsIsRefusedWhole(t *testing.T) {
	const flood = 5600
	var ops strings.Builder
	ops.WriteString("[")
	for i := range flood {
		if i > 0 {
			ops.WriteString(",")
		}
		// As short as an op gets, so that the flood fits in the 256 KiB
		// of one answer.
		fmt.Fprintf(&ops, `{"op":"remember","topic":"%s","text":"x"}`, strconv.FormatInt(int64(i), 36))
	}
	ops.WriteString("]")
	model := demomodel.New(demomodel.Step{Text: "Noted everything.\n```ops\n" + ops.String() + "\n```"})
	p := newPet(t, model)

	p.say("remember all of it")
	reply := p.replyWith("Noted everything.", 30*time.Second)
	asked := time.Now()
	p.say("/status")
	p.replyWith("Up ", 30*time.Second)
	t.Logf("/status answered %v after the flood's reply", time.Since(asked).Round(time.Millisecond))

	if !strings.Contains(reply.Text, fmt.Sprint(flood)) || !strings.Contains(reply.Text, "none of them") {
		t.Errorf("the reply says %q of the refused ops; want it to say that none of the %d was applied", reply.Text[strings.LastIndex(reply.Text, "\n")+1:], flood)
	}
	p.waitTurns(1)
	kept, _ := os.ReadDir(statedir.Layout{Root: p.cfg.StateDir}.MemoryDir())
	if len(kept) != 0 {
		t.Errorf("%d memory files were written from a batch over its bound, want none", len(kept))
	}
}

// schedules is an answer that says text and proposes n schedules.
func schedules(text string, n int) demomodel.Step {
	var ops []string
	for i := range n {
		ops = append(ops, fmt.Sprintf(`{"op":"schedule","when":"in 5h","text":"reminder %d"}`, i))
	}
	return demomodel.Step{Text: text + "\n```ops\n[" + strings.Join(ops, ",") + "]\n```"}
}

// TestEveryRefusedOpIsToldOf: the model schedules 500 reminders in one
// answer, then 30, then 30 more. The 500 are refused whole, and the
// reply says so; of the last 30, the 10 past the 50 schedules that may
// be live are refused, and the owner and the model (in the history the
// next turn reads) are told how many and why, where a log line alone
// once said it while the reply said "Scheduling 30 more".
func TestEveryRefusedOpIsToldOf(t *testing.T) {
	model := demomodel.New(
		schedules("Scheduling 500 reminders.", 500),
		schedules("Scheduling 30 reminders.", 30),
		schedules("Scheduling 30 more.", 30),
		demomodel.Step{Text: "I see."},
	)
	p := newPet(t, model)
	p.say("remind me of everything")
	if r := p.replyWith("Scheduling 500 reminders.", 15*time.Second); !strings.Contains(r.Text, "500 ops in one reply") || !strings.Contains(r.Text, "none of them was applied") {
		t.Errorf("the reply to 500 schedules says %q, want that none of the 500 was applied", r.Text)
	}
	p.say("then 30")
	p.replyWith("Scheduling 30 reminders.", 15*time.Second)
	p.say("and 30 more")
	p.replyWith("Scheduling 30 more.", 15*time.Second)
	told := p.replyWith("could not be applied", 15*time.Second)
	for _, want := range []string{"10 of the 30 schedule op(s)", "50 are live, at most 50"} {
		if !strings.Contains(told.Text, want) {
			t.Errorf("the owner was told %q, want it to say %q", told.Text, want)
		}
	}
	p.say("what happened?")
	p.replyWith("I see.", 15*time.Second)
	reqs := p.model.Requests()
	history := fmt.Sprint(reqs[len(reqs)-1].Messages)
	if !strings.Contains(history, "10 of the 30 schedule op(s) I proposed could not be applied") {
		t.Errorf("the model's next turn does not read what became of its schedules: %.2000s", history)
	}
}
