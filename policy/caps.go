package policy

import (
	"encoding/json"
	"errors"
	"fmt"

	"shelldon/contracts"
)

// The caps of one turn. Each is decided here from counts its caller
// keeps; the caller only counts and acts on the answer.
const (
	// MaxExecutions caps the tool calls one turn may run, parked ones and
	// refused ones not counted. It is the turn's budget that ends, not
	// the call that fails, so it never counts as the call's failure; the
	// cap on model calls bounds a model that keeps calling.
	MaxExecutions = 6
	// MaxRuleRuns bounds the calls granted rules let through in a row in
	// one conversation: a model that goes round running what rules allow
	// is asked again, by the owner's tap, after this many.
	MaxRuleRuns = 6
)

// MayCallModel reports whether a turn that made calls model calls may
// make another under limit, turn.max_model_calls: the model is always
// asked once, so a limit under 1 counts as 1.
func MayCallModel(calls, limit int) bool { return calls < max(limit, 1) }

// MayExecute reports whether a turn that ran executions tool calls may
// run another.
func MayExecute(executions int) bool { return executions < MaxExecutions }

// RulesLetThrough reports whether a granted rule may let a call of a turn
// marked m through without asking, runs being the calls rules let
// through in a row before it in its conversation: never for a marked
// turn ([RulesApply]), and never past [MaxRuleRuns] in a row.
func RulesLetThrough(m string, runs int) bool { return RulesApply(m) && runs < MaxRuleRuns }

// The bounds of the ops one reply proposes, all together: the worker
// checks them as it parses the reply, and core again before it applies
// any (core does not trust the worker). A batch over either is refused
// whole, never a prefix of it. Core writes a batch's files in one step,
// so the count bounds the files it writes then (each op touches one at
// most), and the bytes what it writes, on a board's SD card, for one
// turn: a new tool's module and test at their caps (64 KiB each, JSON
// escaping and all) fit, and no more than one answer of the model holds
// (256 KiB) in the first place.
const (
	MaxOpsPerReply = 32
	MaxOpsBytes    = 256 << 10
)

// ErrTooManyOps is wrapped by [CheckOps] for a batch over its bounds.
var ErrTooManyOps = errors.New("too many ops")

// CheckOps checks the ops of one reply against MaxOpsPerReply and
// MaxOpsBytes (their JSON, as they travel); the error, which wraps
// ErrTooManyOps, is for the owner and the model to read.
func CheckOps(ops []contracts.Op) error {
	if len(ops) > MaxOpsPerReply {
		return fmt.Errorf("%w: %d ops in one reply, more than the %d I may propose at once, so none of them was applied; propose at most %d in one reply",
			ErrTooManyOps, len(ops), MaxOpsPerReply, MaxOpsPerReply)
	}
	size := 0
	for _, op := range ops {
		raw, err := json.Marshal(op)
		if err != nil {
			return fmt.Errorf("%w: %v", contracts.ErrInvalidOp, err)
		}
		size += len(raw)
	}
	if size > MaxOpsBytes {
		return fmt.Errorf("%w: the ops of one reply are %d KiB, more than the %d KiB I may propose at once, so none of them was applied; propose less in one reply",
			ErrTooManyOps, size>>10, MaxOpsBytes>>10)
	}
	return nil
}
