package approval

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"shelldon/contracts"
	"shelldon/daemon/state"
	"shelldon/daemon/visible"
	"shelldon/sandbox"
	"shelldon/tools"
)

// RenderCall is what the owner is shown of a RISKY call, as core's own
// check made it: the tool, the policy's note, and exactly what will run —
// the path and the whole content, the replacement, the URL, the shell
// command, git's arguments quoted one by one. Everything the model chose
// is made visible first, so nothing in it can move the terminal's cursor,
// reverse the text or hide a character. A call asked after the
// conversation read text from outside says so first, with where from.
func RenderCall(tool string, c tools.Checked, outside string) Shown {
	s := Shown{Title: tool, Note: visible.Line(MarkOutside(outside) + c.Note)}
	if c.MCP {
		// The exact arguments the server is sent, one field a line.
		var pretty bytes.Buffer
		if json.Indent(&pretty, []byte(c.Content), "", "  ") != nil {
			pretty.Reset()
			pretty.WriteString(c.Content)
		}
		s.Detail = "arguments:\n" + visible.Text(pretty.String())
		return s
	}
	switch tool {
	case "write_file":
		s.Detail = fmt.Sprintf("write %s:\n%s", visible.Quote(c.Path), visible.Text(c.Content))
	case "edit_file":
		s.Detail = fmt.Sprintf("in %s, replace:\n%s\nwith:\n%s", visible.Quote(c.Path), visible.Text(c.Old), visible.Text(c.New))
	case "http_get":
		s.Detail = "GET " + visible.Line(c.URL)
	case "run_shell":
		// sh -c gets the command as one string: shown as the text it is,
		// lines and all.
		s.Detail = visible.Text(c.Argv[len(c.Argv)-1])
	default:
		s.Detail = visible.Argv(c.Argv)
	}
	return s
}

// MarkOutside is the warning a call asked after reading text from
// outside carries on its card, "" for none.
func MarkOutside(outside string) string {
	if outside == "" {
		return ""
	}
	return "⚠ asked after reading " + outside + ": "
}

// CallDigest is the digest of exactly what an approved call executes —
// the tool and every field of core's check that reaches the execution —
// and of its mark of outside content, so that a request cannot lose the
// mark and still run.
func CallDigest(tool string, c tools.Checked, outside string) string {
	h := sha256.New()
	field(h, "tool", tool)
	marked(h, outside)
	for _, a := range c.Argv {
		field(h, "arg", a)
	}
	field(h, "path", c.Path)
	field(h, "content", c.Content)
	field(h, "old", c.Old)
	field(h, "new", c.New)
	field(h, "url", c.URL)
	field(h, "network", strconv.FormatBool(c.Network))
	return hex.EncodeToString(h.Sum(nil))
}

// RenderPromotion is what the owner is shown of a tool to keep: its code
// and its test as they were gated, what the gate said, and any import it
// could not verify.
func RenderPromotion(p PromotionPayload) Shown {
	note := p.Description
	if len(p.Unverifiable) > 0 {
		note += " — note, imports I could not verify: " + strings.Join(p.Unverifiable, "; ")
	}
	return Shown{
		Title: "new tool " + p.Stem,
		Note:  visible.Line(MarkOutside(p.Outside) + note),
		Detail: fmt.Sprintf("%s.py (%s):\n%s\ntest_%s.py (%s):\n%s\ngate: %s", p.Stem, bytesOf(int64(len(p.Module))), visible.Text(p.Module),
			p.Stem, bytesOf(int64(len(p.Test))), visible.Text(p.Test), visible.Text(p.Gate)),
	}
}

// PromotionDigest is the digest of a tool to keep: its name, its code and
// its test, and what it will be offered as.
func PromotionDigest(p PromotionPayload) string {
	h := sha256.New()
	field(h, "stem", p.Stem)
	field(h, "module", p.Module)
	field(h, "test", p.Test)
	field(h, "description", p.Description)
	field(h, "live", p.Live)
	marked(h, p.Outside)
	return hex.EncodeToString(h.Sum(nil))
}

// marked writes a request's mark of outside content into its digest,
// only when set: a request kept before marks existed keeps its digest
// across the upgrade.
func marked(h hash.Hash, outside string) {
	if outside != "" {
		field(h, "outside", outside)
	}
}

// RenderChangeSet is what the owner is shown of a change set that waits
// for their own look: why, and the whole list — what is created,
// modified, deleted or replaced, with sizes and link targets.
func RenderChangeSet(cs ChangeSetPayload) Shown {
	var b strings.Builder
	b.WriteString("why:\n")
	for _, r := range cs.Risks {
		b.WriteString("  " + visible.Line(r) + "\n")
	}
	b.WriteString("changes:\n")
	if LongChangeList(cs.Changes) {
		// The sum first, where a transport shows only the start; the
		// whole list after it, for the owner's own look.
		b.WriteString(ChangeSummary(cs.Changes))
		b.WriteString("every change:\n")
	}
	b.WriteString(ChangeList(cs.Changes))
	return Shown{
		Title:  "the changes of " + cs.Tool,
		Note:   fmt.Sprintf("%s, run with your approval, changed %d path(s), some of which need your own look before I apply them", visible.Line(cs.Tool), len(cs.Changes)),
		Detail: strings.TrimSuffix(b.String(), "\n"),
	}
}

// RenderTokenCap is what the owner is shown of a message that waits
// past today's token cap: today's figure, the cap, and the message the
// turn would think about.
func RenderTokenCap(p TokenCapPayload) Shown {
	return Shown{
		Title:  "more tokens today",
		Note:   MarkOutside(p.Outside) + fmt.Sprintf("today's turns used %d tokens, at or over your daily cap of %d; Approve and I think about your message anyway, Deny and I let it go", p.Today, p.Cap),
		Detail: visible.Text(p.Text),
	}
}

// TokenCapDigest is the digest of what an approved message past the cap
// starts: a turn on exactly its text.
func TokenCapDigest(p TokenCapPayload) string {
	h := sha256.New()
	field(h, "text", p.Text)
	marked(h, p.Outside)
	return hex.EncodeToString(h.Sum(nil))
}

// RenderMemory is what the owner is shown of what a marked turn would
// keep of them: the warning with where its text came from, and each op
// exactly — the topic and the note, about.md's whole new text, the
// learning and its tags, the face, the schedule to cancel.
func RenderMemory(p MemoryPayload) Shown {
	var b strings.Builder
	for _, op := range p.Ops {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		switch o := op.Body.(type) {
		case contracts.Remember:
			fmt.Fprintf(&b, "add to memory/%s.md:\n%s", visible.Line(cmp.Or(o.Topic, state.DefaultTopic)), visible.Text(o.Text))
		case contracts.RewriteAbout:
			fmt.Fprintf(&b, "replace about.md, what I know of you, with:\n%s", visible.Text(o.Text))
		case contracts.CaptureLearning:
			fmt.Fprintf(&b, "keep a learning (tags: %s):\n%s", visible.Line(strings.Join(o.Tags, ", ")), visible.Text(o.Text))
		case contracts.AddFace:
			fmt.Fprintf(&b, "add the face %s: %s", visible.Line(o.Name), visible.Line(o.Glyphs))
		case contracts.CancelSchedule:
			fmt.Fprintf(&b, "cancel schedule %d (/schedule lists them)", o.ID)
		default:
			fmt.Fprintf(&b, "%s (which I do not keep this way)", visible.Line(op.Body.OpName()))
		}
	}
	return Shown{
		Title:  "memory",
		Note:   visible.Line(MarkOutside(p.Outside) + fmt.Sprintf("%d change(s) to what I keep of you; none is made unless you approve, and no rule can", len(p.Ops))),
		Detail: b.String(),
	}
}

// MemoryDigest is the digest of what an approved request to keep a
// marked turn's memory applies: its ops, their turn and its mark.
func MemoryDigest(p MemoryPayload) string {
	h := sha256.New()
	field(h, "turn", p.Turn)
	field(h, "outside", p.Outside)
	for _, op := range p.Ops {
		raw, _ := json.Marshal(op) // an op decoded from its JSON encodes again
		field(h, "op", string(raw))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ChangeList is a change set as the owner reads it, one path a line:
// the kind of change, the path, and its size or link target.
func ChangeList(changes []sandbox.Change) string {
	var b strings.Builder
	for _, c := range changes {
		fmt.Fprintf(&b, "  %-8s %s", c.Kind, visible.Quote(c.Path))
		switch {
		case c.Kind == sandbox.Deleted:
		case c.Type == fs.ModeSymlink:
			fmt.Fprintf(&b, " -> %s (symbolic link)", visible.Quote(c.Target))
		case c.Type == fs.ModeDir:
			b.WriteString("/")
		case c.Type == 0:
			fmt.Fprintf(&b, " (%s)", bytesOf(c.Size))
		default:
			fmt.Fprintf(&b, " (%s)", c.Type.Type())
		}
		b.WriteString("\n")
	}
	return b.String()
}

// What a listing of changes shows. One of more than MaxListed changes
// (or refusals) is summed up — how many of each kind, where (the
// maxWhere places with the most), the first MaxListed — so that the
// owner reads a few lines whatever its size, and the whole list goes as
// a file of at most maxListFile bytes (Telegram sends it as a document;
// the terminal saves it and prints its path).
const (
	MaxListed   = 20
	maxWhere    = 8
	maxListFile = 256 << 10
)

// LongChangeList says whether a listing of changes is summed up
// ([ChangeSummary]) rather than given whole.
func LongChangeList(changes []sandbox.Change) bool { return len(changes) > MaxListed }

// ChangeSummary is a change set in a few lines: how many paths, of which
// kinds and how many bytes written; where, by directory (two levels
// deep; the rest counted together); and the first changes, as
// [ChangeList] gives them.
func ChangeSummary(changes []sandbox.Change) string {
	var b strings.Builder
	kinds := map[sandbox.ChangeKind]int{}
	where := map[string]int{}
	var written int64
	for _, c := range changes {
		kinds[c.Kind]++
		where[place(c)]++
		if c.Kind != sandbox.Deleted && c.Type == 0 {
			written += c.Size
		}
	}
	var counts []string
	for _, k := range []sandbox.ChangeKind{sandbox.Created, sandbox.Modified, sandbox.Deleted, sandbox.Replaced} {
		if kinds[k] > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", kinds[k], k))
		}
	}
	fmt.Fprintf(&b, "  %d paths (%s), %s written\n  where:\n", len(changes), strings.Join(counts, ", "), bytesOf(written))
	places := slices.SortedFunc(maps.Keys(where), func(x, y string) int { return cmp.Or(where[y]-where[x], strings.Compare(x, y)) })
	for i, dir := range places {
		if i == maxWhere {
			rest := 0
			for _, d := range places[i:] {
				rest += where[d]
			}
			fmt.Fprintf(&b, "    %6d  in %d other places\n", rest, len(places)-i)
			break
		}
		fmt.Fprintf(&b, "    %6d  %s\n", where[dir], visible.Quote(dir))
	}
	shown := changes[:min(len(changes), MaxListed)]
	fmt.Fprintf(&b, "  the first %d:\n%s", len(shown), ChangeList(shown))
	return b.String()
}

// place is where a change lies, for a summary: its directory (a
// directory's own path), at most two levels deep, "./" for the top.
func place(c sandbox.Change) string {
	dir := path.Dir(c.Path)
	if c.Type == fs.ModeDir && c.Kind != sandbox.Deleted {
		dir = c.Path
	}
	if dir == "." {
		return "./"
	}
	parts := strings.SplitN(dir, "/", 3)
	return strings.Join(parts[:min(len(parts), 2)], "/") + "/"
}

// ChangeListFile is the whole list of a change set as a file for the
// owner, cut at maxListFile bytes, saying so.
func ChangeListFile(changes []sandbox.Change) []byte {
	list := ChangeList(changes)
	if len(list) <= maxListFile {
		return []byte(list)
	}
	head := list[:strings.LastIndexByte(list[:maxListFile], '\n')+1]
	return fmt.Appendf([]byte(head), "(cut: the first %d of %d bytes, %d of %d paths)\n", len(head), len(list), strings.Count(head, "\n"), len(changes))
}

// field writes one named field of a digest, length first, so that no two
// different sets of fields hash the same.
func field(h hash.Hash, name, value string) {
	fmt.Fprintf(h, "%s %d\n%s\n", name, len(value), value)
}

// bytesOf says a size for people. It takes an int64, as a file's size is:
// an int is 32 bits on armhf, where a file past 2 GiB would read as a
// negative number of bytes.
func bytesOf(n int64) string {
	switch {
	case n == 1:
		return "1 byte"
	case n < 10<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 10<<20:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
