package chat

import (
	"fmt"
	"strings"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/visible"
)

// idLength is how much of a request's key the terminal shows as its id:
// enough to tell a few waiting requests apart, short enough to type.
const idLength = 6

// pageLines is how much of a request's detail the terminal shows at a
// time; /more shows the next page.
const pageLines = 40

// maxWaiting bounds the requests the terminal keeps track of; core keeps
// every one, and /pending shows them again.
const maxWaiting = 64

// request is one of core's requests, as this terminal knows it.
type request struct {
	key, tool string
	// approving says what its approval does ("running run_shell",
	// "keeping new tool greet"), made visible.
	approving string
	// digest is core's digest of the request as shown here, which the
	// answer carries back.
	digest  string
	expires time.Time
	// note is its one-line risk note, made visible.
	note string
	// rule is the rule the owner may grant with the request, in words
	// made visible; "" when it offers none.
	rule string
	// detail is its detail made visible, a line each; rest is what is
	// left to show of it.
	detail, rest []string
	// answered says the owner answered it here; it waits no more for an
	// answer from this terminal, only for core's word of what it came to.
	answered bool
	// unread says it came while the owner had another request before
	// them — beside it, or in its place — so y or n may have been meant
	// for that one: it is shown again before y or n answers it.
	unread bool
}

// id is how the owner names the request.
func (r *request) id() string {
	if len(r.key) <= idLength {
		return visible.Line(r.key)
	}
	return visible.Line(r.key[:idLength])
}

// what names the request for the owner: its tool and its id.
func (r *request) what() string {
	return fmt.Sprintf("%s [%s]", visible.Line(r.tool), r.id())
}

// requests are the requests core showed this terminal that it has not
// settled, oldest first.
type requests struct {
	all []*request
}

// add keeps a request core shows (again: /pending shows each again, to
// be answered here once more). A request shown again as it was is read
// in full once more; one whose digest changed is unread.
func (rs *requests) add(req contracts.ApprovalRequest) *request {
	detail := strings.Split(visible.Text(req.Detail), "\n")
	r := &request{key: req.Turn, tool: req.Tool, approving: visible.Line(req.Approving), digest: req.Digest, expires: req.Expires, note: visible.Line(req.Note),
		rule: visible.Line(req.Always), detail: detail, rest: detail}
	for i, old := range rs.all {
		if old.key == req.Turn {
			r.unread = old.digest != r.digest
			rs.all[i] = r
			return r
		}
	}
	if len(rs.all) == maxWaiting {
		rs.all = rs.all[1:]
	}
	rs.all = append(rs.all, r)
	return r
}

// settle forgets the request of key, and returns it (nil when unknown).
func (rs *requests) settle(key string) *request {
	for i, r := range rs.all {
		if r.key == key {
			rs.all = append(rs.all[:i], rs.all[i+1:]...)
			return r
		}
	}
	return nil
}

// expire forgets the requests whose time is over, and returns those
// still waiting for an answer from here.
func (rs *requests) expire(now time.Time) []*request {
	var over []*request
	kept := rs.all[:0]
	for _, r := range rs.all {
		switch {
		case r.expires.IsZero() || now.Before(r.expires):
			kept = append(kept, r)
		case !r.answered:
			over = append(over, r)
		}
	}
	rs.all = kept
	return over
}

// waiting are the requests that wait for an answer from here.
func (rs *requests) waiting() []*request {
	var out []*request
	for _, r := range rs.all {
		if !r.answered {
			out = append(out, r)
		}
	}
	return out
}

// named finds the waiting request whose key starts with id; several that
// do are returned all, for the owner to type more of it.
func (rs *requests) named(id string) []*request {
	var out []*request
	for _, r := range rs.waiting() {
		if id != "" && strings.HasPrefix(r.key, id) {
			out = append(out, r)
		}
	}
	return out
}

// list names requests for the owner, in one line.
func list(rs []*request) string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.what()
	}
	return strings.Join(names, ", ")
}

// page takes the next page of the detail, with a note of what is left.
func (r *request) page() string {
	page := r.rest[:min(pageLines, len(r.rest))]
	r.rest = r.rest[len(page):]
	text := "   " + strings.Join(page, "\n   ")
	if n := len(r.rest); n > 0 {
		text += fmt.Sprintf("\n   [… %d more line(s): type %s to see them]", n, MoreCommand)
	}
	return text
}

// closing says what became of a request, once core has settled it.
func (r *request) closing(outcome string) string {
	elsewhere := ""
	if !r.answered {
		elsewhere = " (answered elsewhere)"
	}
	tool := visible.Line(r.tool)
	switch outcome {
	case contracts.ApprovalApproved:
		return "✅ Approved — " + r.approving + elsewhere
	case contracts.ApprovalDenied:
		return "❌ Denied — " + tool + " does not run" + elsewhere
	case contracts.ApprovalExpired:
		return expired(r)
	case contracts.ApprovalReplaced:
		return "↻ Replaced — a newer request takes the place of " + r.what() + "."
	default:
		return r.what() + " no longer waits."
	}
}

// expired says that a request's time ran out.
func expired(r *request) string {
	return "⌛ Expired — " + r.what() + " was not answered in time; nothing ran."
}
