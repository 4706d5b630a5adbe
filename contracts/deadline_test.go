package contracts

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestOnThisClockPinsADeadlineFromTheBus: a deadline decoded from the bus
// has only a wall-clock reading, so comparisons with it follow every step
// of the wall clock; pinned, it carries this process's monotonic reading
// (Time.String shows it as "m=") and keeps the time left.
func TestOnThisClockPinsADeadlineFromTheBus(t *testing.T) {
	raw, err := json.Marshal(Job{Deadline: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	var job Job
	if err := json.Unmarshal(raw, &job); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(job.Deadline.String(), " m=") {
		t.Fatalf("a decoded deadline %s has a monotonic reading; the test premise is wrong", job.Deadline)
	}
	pinned := OnThisClock(job.Deadline)
	if !strings.Contains(pinned.String(), " m=") {
		t.Errorf("OnThisClock(%s) = %s, want it on the monotonic clock", job.Deadline, pinned)
	}
	if left := time.Until(pinned); left < 59*time.Second || left > time.Minute {
		t.Errorf("OnThisClock(%s) leaves %v, want about a minute", job.Deadline, left)
	}
	if !pinned.Equal(job.Deadline) && pinned.Sub(job.Deadline).Abs() > time.Millisecond {
		t.Errorf("OnThisClock(%s) = %s, want the same instant", job.Deadline, pinned)
	}
	if got := OnThisClock(time.Time{}); !got.IsZero() {
		t.Errorf("OnThisClock(zero) = %s, want zero (no deadline)", got)
	}
}
