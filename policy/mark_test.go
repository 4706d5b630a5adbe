package policy

import (
	"testing"

	"shelldon/contracts"
)

// TestMarkAsks: an unmarked turn's ops are applied; a marked turn's schedule
// and tool proposal are applied carrying the mark, and everything else it
// would keep of the owner, or cancel, waits for them — an op this list
// does not know of included.
func TestMarkAsks(t *testing.T) {
	const page = "https://example.com/page"
	for _, tt := range []struct {
		op   contracts.OpBody
		asks bool
	}{
		{contracts.Remember{}, true},
		{contracts.RewriteAbout{}, true},
		{contracts.CaptureLearning{}, true},
		{contracts.AddFace{}, true},
		{contracts.CancelSchedule{}, true},
		{contracts.Schedule{}, false},
		{contracts.ProposeTool{}, false},
		{unknownOp{}, true},
	} {
		if got := MarkAsks(page, tt.op); got != tt.asks {
			t.Errorf("MarkAsks(marked, %s) = %v, want %v", tt.op.OpName(), got, tt.asks)
		}
		if MarkAsks("", tt.op) {
			t.Errorf("MarkAsks(unmarked, %s) = true, want false", tt.op.OpName())
		}
	}
}

type unknownOp struct{}

func (unknownOp) OpName() string  { return "future" }
func (unknownOp) Validate() error { return nil }

// TestAMarkIsNeverLifted: a resumed turn keeps its request's mark even
// when the approved call read nothing; a catch-up is marked by any of
// its texts; rules apply to unmarked turns alone.
func TestAMarkIsNeverLifted(t *testing.T) {
	if got := MarkResumed("https://a.example/", ""); got != "https://a.example/" {
		t.Errorf("MarkResumed(marked, nothing read) = %q, want the request's mark", got)
	}
	if got := MarkResumed("", "https://b.example/"); got != "https://b.example/" {
		t.Errorf("MarkResumed(unmarked, a page read) = %q, want the page", got)
	}
	if got := MarkJoined("", "", "https://c.example/"); got != "https://c.example/" {
		t.Errorf("Joined = %q, want the marked text's mark", got)
	}
	if !RulesApply("") || RulesApply("https://a.example/") {
		t.Error("RulesApply must hold for unmarked turns alone")
	}
}
