package approval

import (
	"fmt"
	"strings"

	"shelldon/contracts"
	"shelldon/daemon/visible"
	"shelldon/sandbox"
)

// Report is what applying a change set did.
type Report struct {
	Applied []sandbox.Change
	Refused []sandbox.Refusal
	// Dropped is a change set refused whole, none of it applied; Err
	// says why.
	Dropped []sandbox.Change
	// Err is why applying stopped, or could not start.
	Err error
	// Guard says which rewritten tests were put back.
	Guard string
}

// listFileName names the file that carries a long list to the owner.
const listFileName = "changes.txt"

// ForModel is the report for the model: every path changed or refused,
// a long list summed up ([ChangeSummary]).
func (rep Report) ForModel() string {
	var lines []string
	if LongChangeList(rep.Applied) {
		lines = append(lines, strings.TrimSuffix(ChangeSummary(rep.Applied), "\n"))
	} else {
		for _, c := range rep.Applied {
			lines = append(lines, fmt.Sprintf("%s %s", c.Kind, c.Path))
		}
	}
	for i, r := range rep.Refused {
		if i == MaxListed {
			lines = append(lines, fmt.Sprintf("and %d more refused", len(rep.Refused)-i))
			break
		}
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
// visible. A long list is summed up in a few lines, and its whole goes
// with the message as a file.
func (rep Report) ForOwner(what string) contracts.Outbound {
	var out contracts.Outbound
	var b strings.Builder
	list := func(changes []sandbox.Change) {
		if !LongChangeList(changes) {
			b.WriteString(strings.TrimSuffix(ChangeList(changes), "\n"))
			return
		}
		b.WriteString(ChangeSummary(changes))
		out.File, out.FileName = ChangeListFile(changes), listFileName
		b.WriteString("  (the whole list is in the file " + listFileName + ")")
	}
	switch {
	case len(rep.Applied) == 0 && rep.Err != nil:
		fmt.Fprintf(&b, "I applied nothing of %s: %s", what, visible.Line(rep.Err.Error()))
		if len(rep.Dropped) > 0 {
			b.WriteString(". What it changed:\n")
			list(rep.Dropped)
		}
		out.Text = b.String()
		return out
	case len(rep.Applied) == 0:
		fmt.Fprintf(&b, "%s changed nothing in the workspace.", what)
	default:
		fmt.Fprintf(&b, "Applied to the workspace, from %s:\n", what)
		list(rep.Applied)
	}
	for i, r := range rep.Refused {
		if i == MaxListed {
			fmt.Fprintf(&b, "\n  … and %d more refused", len(rep.Refused)-i)
			break
		}
		fmt.Fprintf(&b, "\n  refused  %s: %s", visible.Quote(r.Change.Path), visible.Line(r.Reason))
	}
	if rep.Err != nil && len(rep.Applied) > 0 {
		fmt.Fprintf(&b, "\nApplying stopped there: %s", visible.Line(rep.Err.Error()))
	}
	if rep.Guard != "" {
		b.WriteString("\n" + visible.Text(rep.Guard))
	}
	out.Text = b.String()
	return out
}
