package approved

import (
	"fmt"
	"strings"

	"shelldon/daemon/approval"
	"shelldon/daemon/visible"
	"shelldon/sandbox"
)

// Report is what applying a change set did.
type Report struct {
	Applied []sandbox.Change
	Refused []sandbox.Refusal
	// Err is why applying stopped, or could not start.
	Err error
	// Guard says which rewritten tests were put back.
	Guard string
}

// ForModel is the report for the model: every path changed or refused.
func (rep Report) ForModel() string {
	var lines []string
	for _, c := range rep.Applied {
		lines = append(lines, fmt.Sprintf("%s %s", c.Kind, c.Path))
	}
	for _, r := range rep.Refused {
		lines = append(lines, fmt.Sprintf("refused %s: %s", r.Change.Path, r.Reason))
	}
	if rep.Err != nil {
		lines = append(lines, "applying stopped: "+rep.Err.Error())
	}
	if len(lines) == 0 {
		return "no changes"
	}
	return "changes:\n" + strings.Join(lines, "\n")
}

// ForOwner is the report for the owner: what was applied to the
// workspace, with sizes, and what was refused and why, every path made
// visible.
func (rep Report) ForOwner(what string) string {
	var b strings.Builder
	switch {
	case len(rep.Applied) == 0 && rep.Err != nil:
		fmt.Fprintf(&b, "I applied nothing of %s: %s", what, visible.Line(rep.Err.Error()))
		return b.String()
	case len(rep.Applied) == 0:
		fmt.Fprintf(&b, "%s changed nothing in the workspace.", what)
	default:
		fmt.Fprintf(&b, "Applied to the workspace, from %s:\n%s", what, strings.TrimSuffix(approval.ChangeList(rep.Applied), "\n"))
	}
	for _, r := range rep.Refused {
		fmt.Fprintf(&b, "\n  refused  %s: %s", visible.Quote(r.Change.Path), visible.Line(r.Reason))
	}
	if rep.Err != nil && len(rep.Applied) > 0 {
		fmt.Fprintf(&b, "\nApplying stopped there: %s", visible.Line(rep.Err.Error()))
	}
	if rep.Guard != "" {
		b.WriteString("\n" + visible.Text(rep.Guard))
	}
	return b.String()
}
