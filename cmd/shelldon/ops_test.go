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
