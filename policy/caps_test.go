package policy

import (
	"errors"
	"strings"
	"testing"

	"shelldon/contracts"
)

// TestCheckOps: a reply's ops up to MaxOpsPerReply and MaxOpsBytes pass;
// one op more, or a byte more, is refused with ErrTooManyOps, saying that
// none was applied.
func TestCheckOps(t *testing.T) {
	notes := func(n, size int) []contracts.Op {
		ops := make([]contracts.Op, n)
		for i := range ops {
			ops[i] = contracts.Op{Body: contracts.Remember{Topic: "t", Text: strings.Repeat("x", size)}}
		}
		return ops
	}
	if err := CheckOps(notes(MaxOpsPerReply, 10)); err != nil {
		t.Errorf("CheckOps of %d small ops = %v, want nil", MaxOpsPerReply, err)
	}
	tool := contracts.Op{Body: contracts.ProposeTool{Name: "big", Code: strings.Repeat("x", contracts.MaxToolSourceSize), Test: strings.Repeat("y", contracts.MaxToolSourceSize)}}
	if err := CheckOps([]contracts.Op{tool}); err != nil {
		t.Errorf("CheckOps of a tool at its caps = %v, want nil", err)
	}
	for name, ops := range map[string][]contracts.Op{
		"one op too many":  notes(MaxOpsPerReply+1, 10),
		"too many bytes":   {tool, tool},
		"a flood of notes": notes(5600, 1),
	} {
		err := CheckOps(ops)
		if !errors.Is(err, ErrTooManyOps) || !strings.Contains(err.Error(), "none of them was applied") {
			t.Errorf("CheckOps with %s = %v, want ErrTooManyOps saying none was applied", name, err)
		}
	}
}

// TestTurnCaps: each cap lets a turn go up to its figure and no further;
// the model is always asked once, and rules let nothing of a marked turn
// through.
func TestTurnCaps(t *testing.T) {
	for _, tt := range []struct {
		calls, limit int
		want         bool
	}{{0, 0, true}, {1, 0, false}, {0, -3, true}, {2, 3, true}, {3, 3, false}, {4, 3, false}} {
		if got := MayCallModel(tt.calls, tt.limit); got != tt.want {
			t.Errorf("MayCallModel(%d, %d) = %v, want %v", tt.calls, tt.limit, got, tt.want)
		}
	}
	if !MayExecute(MaxExecutions-1) || MayExecute(MaxExecutions) {
		t.Errorf("MayExecute must allow %d executions and no more", MaxExecutions)
	}
	const page = "https://example.com/page"
	for _, tt := range []struct {
		mark string
		runs int
		want bool
	}{{"", 0, true}, {"", MaxRuleRuns - 1, true}, {"", MaxRuleRuns, false}, {page, 0, false}} {
		if got := RulesLetThrough(tt.mark, tt.runs); got != tt.want {
			t.Errorf("RulesLetThrough(%q, %d) = %v, want %v", tt.mark, tt.runs, got, tt.want)
		}
	}
}
