package hubtest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Log records the log lines of a bus component under test (a hub's or a
// client's Logf) so that the test can wait for one.
type Log struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed and replaced on every line
}

// NewLog returns an empty log.
func NewLog() *Log { return &Log{changed: make(chan struct{})} }

// Logf records one line; it is the component's Logf.
func (l *Log) Logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	close(l.changed)
	l.changed = make(chan struct{})
}

// WaitFor waits for a line containing substr, failing the test with
// every line so far if none comes within the patience.
func (l *Log) WaitFor(t testing.TB, substr string) { l.WaitAfter(t, 0, substr) }

// WaitAfter waits for a line containing substr among the lines from the
// from'th on (0 is the first), and returns the count of lines up to and
// including it: the from of a wait for the next such line.
func (l *Log) WaitAfter(t testing.TB, from int, substr string) int {
	t.Helper()
	deadline := time.After(patience)
	for {
		l.mu.Lock()
		for i := from; i < len(l.lines); i++ {
			if strings.Contains(l.lines[i], substr) {
				l.mu.Unlock()
				return i + 1
			}
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("no log line containing %q within %v; got:\n%s", substr, patience, strings.Join(l.lines, "\n"))
			return 0
		}
	}
}

// Lines returns the lines so far.
func (l *Log) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}
