package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/slogtest"
	"time"

	sdjournal "github.com/coreos/go-systemd/v22/journal"

	"shelldon/clock"
)

// capture stands in for journal.Send, keeping each entry as the fields
// journald would store, MESSAGE and PRIORITY included.
type capture struct {
	mu      sync.Mutex
	entries []map[string]string
}

func (c *capture) send(message string, pri sdjournal.Priority, vars map[string]string) error {
	entry := maps.Clone(vars)
	entry["MESSAGE"] = message
	entry["PRIORITY"] = strconv.Itoa(int(pri))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = append(c.entries, entry)
	return nil
}

// last is the one entry logged since the previous call.
func (c *capture) last(t *testing.T) map[string]string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) != 1 {
		t.Fatalf("captured %d entries, want 1", len(c.entries))
	}
	entry := c.entries[0]
	c.entries = nil
	return entry
}

func newCaptured(opts Options) (*Handler, *capture) {
	h := NewHandler(opts)
	c := &capture{}
	h.sender.send = c.send
	return h, c
}

// attrFields are the fields that came from attributes.
func attrFields(entry map[string]string) map[string]string {
	fields := map[string]string{}
	for k, v := range entry {
		if strings.HasPrefix(k, FieldPrefix) && k != FieldName(slog.TimeKey) {
			fields[k] = v
		}
	}
	return fields
}

func TestFieldName(t *testing.T) {
	for _, tc := range []struct {
		path []string
		want string
	}{
		{[]string{"turn"}, "SHELLDON_TURN"},
		{[]string{"tool"}, "SHELLDON_TOOL"},
		{[]string{"decision"}, "SHELLDON_DECISION"},
		{[]string{"a.b"}, "SHELLDON_A_B"},
		{[]string{"http", "status"}, "SHELLDON_HTTP_STATUS"},
		{[]string{"G", "H", "k"}, "SHELLDON_G_H_K"},
		{[]string{"tool-name"}, "SHELLDON_TOOL_NAME"},
		{[]string{"Mixed Case"}, "SHELLDON_MIXED_CASE"},
		{[]string{"_private"}, "SHELLDON__PRIVATE"},
		{[]string{"1st"}, "SHELLDON_1ST"},
		{[]string{"ünï"}, "SHELLDON__N_"},
		{[]string{"a=b\nc"}, "SHELLDON_A_B_C"},
		{[]string{"\xff"}, "SHELLDON__"},
		{[]string{strings.Repeat("k", 100)}, "SHELLDON_" + strings.Repeat("K", maxFieldName-len(FieldPrefix))},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := FieldName(tc.path...); got != tc.want {
				t.Errorf("FieldName(%q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}

type textID struct{ id string }

func (x textID) MarshalText() ([]byte, error) { return []byte("id:" + x.id), nil }

type brokenText struct{}

func (brokenText) MarshalText() ([]byte, error) { return nil, errors.New("no text") }

type turnValuer struct{ id string }

func (v turnValuer) LogValue() slog.Value { return slog.StringValue("turn " + v.id) }

type groupValuer struct{}

func (groupValuer) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", "t1"), slog.Int("step", 2))
}

type nilError struct{ msg string }

func (e *nilError) Error() string { return e.msg }

func TestAttrsBecomeFields(t *testing.T) {
	when := time.Date(2025, 3, 4, 5, 6, 7, 890, time.UTC)
	var nilErr *nilError
	for _, tc := range []struct {
		name string
		log  func(l *slog.Logger)
		want map[string]string
	}{
		{"plain keys", func(l *slog.Logger) { l.Info("m", "turn", "t-42", "tool", "run_shell", "decision", "approve") },
			map[string]string{"SHELLDON_TURN": "t-42", "SHELLDON_TOOL": "run_shell", "SHELLDON_DECISION": "approve"}},
		{"dotted key", func(l *slog.Logger) { l.Info("m", "a.b", 1) },
			map[string]string{"SHELLDON_A_B": "1"}},
		{"WithGroup and key", func(l *slog.Logger) { l.WithGroup("http").Info("m", "status", 200) },
			map[string]string{"SHELLDON_HTTP_STATUS": "200"}},
		{"nested groups", func(l *slog.Logger) {
			l.WithGroup("G").Info("m", slog.Group("H", "k", "v"), slog.Group("", "inline", true))
		}, map[string]string{"SHELLDON_G_H_K": "v", "SHELLDON_G_INLINE": "true"}},
		{"WithAttrs inside a group", func(l *slog.Logger) { l.WithGroup("G").With("a", 1).Info("m", "b", 2) },
			map[string]string{"SHELLDON_G_A": "1", "SHELLDON_G_B": "2"}},
		{"weird keys", func(l *slog.Logger) { l.Info("m", "tool-name", "x", "_x", "y", "1x", "z", "ünï", "w") },
			map[string]string{"SHELLDON_TOOL_NAME": "x", "SHELLDON__X": "y", "SHELLDON_1X": "z", "SHELLDON__N_": "w"}},
		{"empty key dropped", func(l *slog.Logger) { l.Info("m", "", "lost", slog.Group("empty"), "kept", 1) },
			map[string]string{"SHELLDON_KEPT": "1"}},
		{"multi-line value", func(l *slog.Logger) { l.Info("m", "out", "line 1\nline 2\n") },
			map[string]string{"SHELLDON_OUT": "line 1\nline 2\n"}},
		{"kinds", func(l *slog.Logger) {
			l.Info("m", "at", when, "took", 1500*time.Millisecond, "f", 0.25, "u", uint64(7), "neg", -3, "ok", false)
		}, map[string]string{"SHELLDON_AT": "2025-03-04T05:06:07.00000089Z", "SHELLDON_TOOK": "1.5s",
			"SHELLDON_F": "0.25", "SHELLDON_U": "7", "SHELLDON_NEG": "-3", "SHELLDON_OK": "false"}},
		{"any values", func(l *slog.Logger) {
			l.Info("m", "err", fmt.Errorf("open state: %w", errors.New("gone")), "id", textID{"7"},
				"addr", netip.MustParseAddr("127.0.0.1"), "raw", []byte("bytes"), "list", []int{1, 2}, "nil", nil)
		}, map[string]string{"SHELLDON_ERR": "open state: gone", "SHELLDON_ID": "id:7", "SHELLDON_ADDR": "127.0.0.1",
			"SHELLDON_RAW": "bytes", "SHELLDON_LIST": "[1 2]", "SHELLDON_NIL": "<nil>"}},
		{"LogValuers resolved", func(l *slog.Logger) { l.With("w", turnValuer{"t1"}).Info("m", "turn", groupValuer{}) },
			map[string]string{"SHELLDON_W": "turn t1", "SHELLDON_TURN_ID": "t1", "SHELLDON_TURN_STEP": "2"}},
		{"bad values never panic", func(l *slog.Logger) {
			l.Info("m", "nilerr", error(nilErr), "text", brokenText{})
		}, map[string]string{
			"SHELLDON_NILERR": "!PANIC: runtime error: invalid memory address or nil pointer dereference",
			"SHELLDON_TEXT":   "!ERROR: no text"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, c := newCaptured(Options{Actor: "core"})
			tc.log(slog.New(h))
			got := attrFields(c.last(t))
			if !maps.Equal(got, tc.want) {
				t.Errorf("attribute fields = %q, want %q", got, tc.want)
			}
		})
	}
}

type panickyValuer struct{}

func (panickyValuer) LogValue() slog.Value { panic("no value") }

// TestPanickingValuerIsLogged checks that a LogValuer that panics costs
// only its own field: slog turns the panic into an error that names it.
func TestPanickingValuerIsLogged(t *testing.T) {
	h, c := newCaptured(Options{})
	slog.New(h).Info("m", "valuer", panickyValuer{}, "after", 1)
	entry := c.last(t)
	if got := entry["SHELLDON_VALUER"]; !strings.HasPrefix(got, "LogValue panicked\n") {
		t.Errorf("SHELLDON_VALUER = %q, want the panic with its stack", got)
	}
	if got := entry["SHELLDON_AFTER"]; got != "1" {
		t.Errorf("SHELLDON_AFTER = %q, want %q", got, "1")
	}
}

func TestBuiltinFields(t *testing.T) {
	for _, tc := range []struct {
		actor, wantIdentifier string
	}{
		{"core", "shelldon-core"},
		{"broker", "shelldon-broker"},
		{"", "shelldon"},
	} {
		t.Run(tc.wantIdentifier, func(t *testing.T) {
			h, c := newCaptured(Options{Actor: tc.actor})
			when := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
			r := slog.NewRecord(when, slog.LevelInfo, "first line\nsecond line", 0)
			if err := h.Handle(context.Background(), r); err != nil {
				t.Fatalf("Handle: %v", err)
			}
			want := map[string]string{
				"MESSAGE":           "first line\nsecond line",
				"PRIORITY":          "6",
				"SYSLOG_IDENTIFIER": tc.wantIdentifier,
				"SHELLDON_TIME":     "2025-01-02T03:04:05.000000006Z",
			}
			if got := c.last(t); !maps.Equal(got, want) {
				t.Errorf("entry = %q, want %q", got, want)
			}
		})
	}
}

func TestPriority(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		want  string
	}{
		{slog.LevelDebug - 4, "7"},
		{slog.LevelDebug, "7"},
		{slog.LevelInfo, "6"},
		{slog.LevelInfo + 2, "6"},
		{slog.LevelWarn, "4"},
		{slog.LevelWarn + 1, "4"},
		{slog.LevelError, "3"},
		{slog.LevelError + 8, "3"},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			h, c := newCaptured(Options{Level: slog.LevelDebug - 8})
			slog.New(h).Log(context.Background(), tc.level, "m")
			if got := c.last(t)["PRIORITY"]; got != tc.want {
				t.Errorf("PRIORITY for %v = %s, want %s", tc.level, got, tc.want)
			}
		})
	}
}

func TestLevelFilters(t *testing.T) {
	for _, tc := range []struct {
		min   slog.Leveler
		level slog.Level
		want  bool
	}{
		{nil, slog.LevelDebug, false},
		{nil, slog.LevelInfo, true},
		{slog.LevelWarn, slog.LevelInfo, false},
		{slog.LevelWarn, slog.LevelError, true},
		{slog.LevelDebug, slog.LevelDebug, true},
	} {
		h := NewHandler(Options{Level: tc.min})
		if got := h.Enabled(context.Background(), tc.level); got != tc.want {
			t.Errorf("Enabled(%v) with Level %v = %v, want %v", tc.level, tc.min, got, tc.want)
		}
	}
}

func TestSource(t *testing.T) {
	for _, addSource := range []bool{true, false} {
		t.Run(strconv.FormatBool(addSource), func(t *testing.T) {
			h, c := newCaptured(Options{AddSource: addSource})
			_, file, line, _ := runtime.Caller(0)
			slog.New(h).Info("m") // must stay on the line after runtime.Caller
			entry := c.last(t)
			want := map[string]string{}
			if addSource {
				want = map[string]string{
					"CODE_FILE": file,
					"CODE_LINE": strconv.Itoa(line + 1),
					"CODE_FUNC": "shelldon/daemon/journal.TestSource.func1",
				}
			}
			got := map[string]string{}
			for _, k := range []string{"CODE_FILE", "CODE_LINE", "CODE_FUNC"} {
				if v, ok := entry[k]; ok {
					got[k] = v
				}
			}
			if !maps.Equal(got, want) {
				t.Errorf("source fields = %q, want %q", got, want)
			}
		})
	}
}

// TestDerivedHandlersAreIndependent checks that WithAttrs and WithGroup
// leave the handler they derive from as it was, even when two handlers
// derive from one parent whose field slice has spare capacity.
func TestDerivedHandlersAreIndependent(t *testing.T) {
	root, c := newCaptured(Options{})
	// Three attributes appended one by one leave a slice of capacity four.
	parent := root.WithAttrs([]slog.Attr{slog.Int("p", 0), slog.Int("q", 0), slog.Int("r", 0)}).WithGroup("G")
	first := parent.WithAttrs([]slog.Attr{slog.Int("a", 1)})
	second := parent.WithAttrs([]slog.Attr{slog.Int("b", 2)}).WithGroup("H")
	for _, tc := range []struct {
		name string
		h    slog.Handler
		want map[string]string
	}{
		{"root", root, map[string]string{"SHELLDON_K": "v"}},
		{"parent", parent, map[string]string{"SHELLDON_P": "0", "SHELLDON_Q": "0", "SHELLDON_R": "0", "SHELLDON_G_K": "v"}},
		{"first", first, map[string]string{"SHELLDON_P": "0", "SHELLDON_Q": "0", "SHELLDON_R": "0", "SHELLDON_G_A": "1", "SHELLDON_G_K": "v"}},
		{"second", second, map[string]string{"SHELLDON_P": "0", "SHELLDON_Q": "0", "SHELLDON_R": "0", "SHELLDON_G_B": "2", "SHELLDON_G_H_K": "v"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slog.New(tc.h).Info("m", "k", "v")
			if got := attrFields(c.last(t)); !maps.Equal(got, tc.want) {
				t.Errorf("fields = %q, want %q", got, tc.want)
			}
		})
	}
	if h := root.WithGroup(""); h != slog.Handler(root) {
		t.Errorf("WithGroup(\"\") = %v, want the handler itself", h)
	}
}

// slogtestMap turns a journal entry back into what slogtest expects. The
// journal flattens groups into '_'-joined, upper-cased names, which cannot
// be undone in general; slogtest's vocabulary can: its keys are lower-case
// letters and its groups upper-case ones.
func slogtestMap(entry map[string]string) map[string]any {
	m := map[string]any{}
	for name, value := range entry {
		switch {
		case name == "MESSAGE":
			m[slog.MessageKey] = value
		case name == "PRIORITY":
			m[slog.LevelKey] = value
		case name == "CODE_FILE":
			m[slog.SourceKey] = value
		case strings.HasPrefix(name, FieldPrefix):
			path := strings.Split(strings.TrimPrefix(name, FieldPrefix), "_")
			group := m
			for _, g := range path[:len(path)-1] {
				inner, ok := group[g].(map[string]any)
				if !ok {
					inner = map[string]any{}
					group[g] = inner
				}
				group = inner
			}
			group[strings.ToLower(path[len(path)-1])] = value
		}
	}
	return m
}

func TestSlogConformance(t *testing.T) {
	h, c := newCaptured(Options{AddSource: true})
	results := func() []map[string]any {
		var ms []map[string]any
		for _, entry := range c.entries {
			ms = append(ms, slogtestMap(entry))
		}
		return ms
	}
	if err := slogtest.TestHandler(h, results); err != nil {
		t.Error(err)
	}
}

func TestSendFailureFallsBack(t *testing.T) {
	var out bytes.Buffer
	h := NewHandler(Options{Actor: "core", Fallback: slog.NewTextHandler(&out, nil)})
	h.sender.send = func(string, sdjournal.Priority, map[string]string) error {
		return errors.New("connection refused")
	}
	l := slog.New(h).With("turn", "t1").WithGroup("G")
	l.Info("first", "k", 1)
	l.Warn("second", "k", 2)
	got := out.String()
	for _, want := range []string{
		`level=WARN msg="journald did not take a record; records it does not take are written here instead" err="send to journald: connection refused"`,
		`level=INFO msg=first turn=t1 G.k=1`,
		`level=WARN msg=second turn=t1 G.k=2`,
	} {
		if strings.Count(got, want) != 1 {
			t.Errorf("fallback holds %q %d times, want once; fallback:\n%s", want, strings.Count(got, want), got)
		}
	}
	if n := strings.Count(got, "\n"); n != 3 {
		t.Errorf("fallback has %d lines, want 3 (one warning, two records):\n%s", n, got)
	}
	if n := h.SendFailures(); n != 2 {
		t.Errorf("SendFailures() = %d, want 2", n)
	}
}

func TestTee(t *testing.T) {
	var out bytes.Buffer
	h, c := newCaptured(Options{Tee: true, Fallback: slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn})})
	l := slog.New(h).With("turn", "t1")
	l.Warn("both")
	l.Info("journal only", "because", "the fallback's level is Warn")
	if n := len(c.entries); n != 2 {
		t.Errorf("journal got %d entries, want 2", n)
	}
	got := out.String()
	if !strings.Contains(got, "msg=both turn=t1") || strings.Contains(got, "journal only") {
		t.Errorf("fallback = %q, want only the Warn record", got)
	}
	if n := h.SendFailures(); n != 0 {
		t.Errorf("SendFailures() = %d, want 0", n)
	}
}

// TestHungSendFallsBack lets journald hang on one send: the caller gets
// its record written to the fallback once the timeout passes, and while
// the hung send lasts, records skip journald instead of piling up.
func TestHungSendFallsBack(t *testing.T) {
	var out bytes.Buffer
	h := NewHandler(Options{Fallback: slog.NewTextHandler(&out, nil)})
	fake := clock.NewFake(time.Unix(0, 0))
	h.sender.clock = fake
	h.sender.maxHung = 1
	entered := make(chan string, 2)
	release := make(chan struct{})
	h.sender.send = func(message string, _ sdjournal.Priority, _ map[string]string) error {
		entered <- message
		<-release
		return nil
	}
	l := slog.New(h)

	logged := make(chan struct{})
	go func() {
		l.Info("hangs")
		close(logged)
	}()
	<-entered
	fake.Advance(sendTimeout - time.Nanosecond)
	select {
	case <-logged:
		t.Fatal("Info returned before the send timed out")
	default:
	}
	fake.Advance(time.Nanosecond)
	<-logged

	skipped := make(chan struct{})
	go func() {
		l.Info("skips journald")
		close(skipped)
	}()
	select {
	case m := <-entered:
		t.Fatalf("record %q was sent while journald hangs", m)
	case <-skipped:
	}
	close(release)

	got := out.String()
	for _, want := range []string{"msg=hangs", `msg="skips journald"`, "not taken within 500ms"} {
		if !strings.Contains(got, want) {
			t.Errorf("fallback lacks %q:\n%s", want, got)
		}
	}
	if n := h.SendFailures(); n != 2 {
		t.Errorf("SendFailures() = %d, want 2", n)
	}
}
