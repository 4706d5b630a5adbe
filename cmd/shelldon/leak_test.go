package main

import (
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/demomodel"
	"shelldon/transports/telegram/telegramtest"
)

// TestNoLeaksOverManyTurns lives 150 turns over Telegram — chats, FREE
// tools, and writes the owner approves or denies with the buttons — after
// 20 to warm up, and checks that core, the broker and the Telegram
// transport (all in this process) end with the goroutines and open files
// they had after the warm-up. A pet that runs for months
// cannot afford to leak one of either per turn; 150 turns would show
// even one leaked every tenth turn (40 under the race detector, where
// turns are slow, one every fourth).
func TestNoLeaksOverManyTurns(t *testing.T) {
	warmUp, measured := 20, 150
	if raceDetector {
		// A turn takes about a second there; 40 still show a leak of one
		// every fourth turn.
		warmUp, measured = 10, 40
	}
	number := regexp.MustCompile(`message (\d+)`)
	model := demomodel.New()
	model.Fallback = func(req demomodel.Request) demomodel.Step {
		n := "?"
		if m := number.FindStringSubmatch(lastUser(req)); m != nil {
			n = m[1]
		}
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == contracts.ChatTool:
			return demomodel.Step{Text: "done " + n}
		case strings.Contains(last.Content, "clock"):
			return demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "c" + n, Name: "get_time", Args: `{}`}}}
		case strings.Contains(last.Content, "write"):
			return writeCall("w"+n, "note"+n+".txt", "x")
		}
		return demomodel.Step{Text: "ok " + n}
	}
	api := telegramtest.New(t, botToken)
	p := newPet(t, model, withTelegram(api))
	turns := 0
	live := func(i int) {
		t.Helper()
		n := strconv.Itoa(i)
		switch {
		case i%10 == 9: // a write: the turn parks, the owner taps, a second turn finishes it
			api.SendText(ownerID, "message "+n+": write a note")
			ask := waitAsk(t, api, "note"+n+".txt")
			turns++
			p.waitTurns(turns)
			decision := "Deny"
			if i%20 == 9 {
				decision = "Approve"
			}
			tap(api, ask, decision)
		case i%3 == 2:
			api.SendText(ownerID, "message "+n+": look at the clock")
		default:
			api.SendText(ownerID, "message "+n)
		}
		api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool { return m.Text == "ok "+n || m.Text == "done "+n })
		turns++
		p.waitTurns(turns)
	}
	for i := range warmUp {
		live(i)
	}
	goroutines, files := quietest(runtime.NumGoroutine), quietest(openFiles(t))
	for i := warmUp; i < warmUp+measured; i++ {
		live(i)
	}
	// A generous slack: keep-alive connections and timers come and go.
	goroutinesAfter, filesAfter := quietest(runtime.NumGoroutine), quietest(openFiles(t))
	t.Logf("after %d turns: %d goroutines (%d before), %d open files (%d before)", measured, goroutinesAfter, goroutines, filesAfter, files)
	if goroutinesAfter > goroutines+10 {
		t.Errorf("goroutines: %d after %d turns, %d before them", goroutinesAfter, measured, goroutines)
	}
	if filesAfter > files+5 {
		t.Errorf("open files: %d after %d turns, %d before them", filesAfter, measured, files)
	}
}

// quietest samples count for a second and keeps the least, since the
// goroutines and files of polls and connections come and go.
func quietest(count func() int) int {
	least := count()
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		least = min(least, count())
	}
	return least
}

// openFiles counts this process's open file descriptors.
func openFiles(t *testing.T) func() int {
	return func() int {
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
}
