package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"shelldon/daemon/chat/chattest"
	"shelldon/daemon/statedir"
	"shelldon/testhost"
)

// TestMakeRunInATerminal is `make run` as its owner lives it: `shelldon
// up --chat` in a pseudo-terminal of its own, the demo model it starts
// beside it, a real core, broker, worker and panel behind the chat. The
// owner types the banner's phrases: a write is asked about, a message and
// /help typed while it waits are what they are (the help saying nothing
// of buttons, which a terminal has none of), y approves it and the file
// is written; a note is remembered; /rules says how to grant one here; nothing reaches the terminal raw;
// Ctrl-D ends it all.
func TestMakeRunInATerminal(t *testing.T) {
	demo := demoModelForOthers(t)
	workerBinary(t) // `up` runs the worker from beside this test binary
	state := testhost.ShortDir(t)
	term := chattest.New(t)

	up := exec.Command(os.Args[0], "up", "--chat", "--state-dir", state)
	up.Env = append(os.Environ(), "SHELLDON_TEST_MAIN=1", "PATH="+demo+string(os.PathListSeparator)+os.Getenv("PATH"))
	up.Stdin, up.Stdout, up.Stderr = term.Slave, term.Slave, term.Slave
	up.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = up.Wait(); close(exited) }()
	t.Cleanup(func() {
		up.Process.Kill()
		<-exited
	})
	term.Slave.Close() // the pet's now: the terminal closes when it exits

	term.WaitFor(t, "*** DEMO MODEL")
	term.WaitFor(t, "***   try: write a haiku to poem.txt — ")
	// A line typed before the chat has joined core is refused with a
	// note; type until one is taken.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(term.Screen(), "You said: “hello there”") {
		if time.Now().After(deadline) {
			t.Fatalf("no reply in the terminal:\n%s", term.Screen())
		}
		term.Line(t, "hello there")
		time.Sleep(300 * time.Millisecond)
	}

	term.Line(t, "write a haiku to poem.txt")
	term.WaitFor(t, "── shelldon asks to use write_file [")
	term.WaitUntil(t, "the approval prompt", func(string) bool { return strings.HasPrefix(term.LastLine(), "approve? [y/n") })

	term.Line(t, "tell me a long story")
	term.WaitFor(t, "You said: “tell me a long story”")
	before := len(term.Screen())
	term.Line(t, "/help")
	term.WaitUntil(t, "/help's phrases", func(screen string) bool {
		return strings.Contains(screen[before:], "only these phrases") && strings.Contains(screen[before:], "try: remember I like hazelnut coffee — ")
	})
	if help := term.Screen()[before:]; strings.Contains(strings.ToLower(help), "button") {
		t.Errorf("/help in the terminal speaks of buttons, which it has none of:\n%s", help)
	}
	term.WaitUntil(t, "the approval prompt again", func(string) bool { return strings.HasPrefix(term.LastLine(), "approve? [y/n") })

	term.Line(t, "y")
	term.WaitFor(t, "✅ Approved — running write_file")
	term.WaitFor(t, "Done: wrote 78 bytes to poem.txt")
	layout := statedir.Layout{Root: state}
	if poem, err := os.ReadFile(filepath.Join(layout.Workspace(), "poem.txt")); err != nil || !strings.Contains(string(poem), "beneath the moon") {
		t.Errorf("poem.txt after y = %q, %v; want the haiku", poem, err)
	}

	term.Line(t, "remember I like hazelnut coffee")
	term.WaitFor(t, "Noted! I'll remember: “I like hazelnut coffee”.")

	before = len(term.Screen())
	term.Line(t, "/rules")
	term.WaitFor(t, "No rules: everything that needs your approval asks.")
	term.WaitUntil(t, "the prompt after /rules", func(string) bool { return term.LastLine() == ">" })
	if rules := term.Screen()[before:]; strings.Contains(rules, "Tap") {
		t.Errorf("/rules in the terminal says to tap, which it cannot:\n%s", rules)
	}

	term.Type(t, "\x04")
	term.WaitFor(t, "bye")
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("up --chat after Ctrl-D = %v, want a clean exit", waitErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("up --chat did not stop after Ctrl-D:\n%s", term.Screen())
	}
	if notes, err := os.ReadFile(layout.MemoryTopic("notes")); err != nil || !strings.Contains(string(notes), "I like hazelnut coffee") {
		t.Errorf("memory/notes.md = %q, %v; want the note", notes, err)
	}
	if raw := term.Foreign(); len(raw) > 0 {
		t.Errorf("these reached the terminal raw: %q", raw)
	}
}
