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
func (l *Log) WaitFor(t testing.TB, substr string) {
	t.Helper()
	deadline := time.After(patience)
	for {
		l.mu.Lock()
		for _, line := range l.lines {
			if strings.Contains(line, substr) {
				l.mu.Unlock()
				return
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
		}
	}
}
