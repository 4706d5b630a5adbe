package telegram

import (
	"fmt"
	"html"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-telegram/bot/models"

	"shelldon/contracts"
)

// maxMessage is Telegram's limit on a message's text once its HTML is
// parsed, in UTF-16 code units.
const maxMessage = 4096

// maxNote bounds the policy note on an approval, so the detail keeps room.
const maxNote = 512

// maxFile bounds the file that carries a long detail, well inside the
// outbox's limit on one item; a detail longer still is cut, and says so.
const maxFile = 512 << 10

// outcomeRoom is kept free in an approval message for the outcome line
// its edit appends ("✅ Approved at 12:03").
const outcomeRoom = 64

// Callback data prefixes of the approval buttons. With a turn id of 16
// hex digits, or "promote-" and a tool's name, the data stays far under
// Telegram's 64 bytes; longer keys are refused when the keyboard is built.
const (
	approvePrefix = "a:"
	denyPrefix    = "d:"
	// alwaysPrefix approves and grants the rule the request offered.
	alwaysPrefix = "r:"
)

// maxCallbackData is Telegram's limit on a button's callback data, in bytes.
const maxCallbackData = 64

// width is s's length as Telegram counts it: UTF-16 code units.
func width(s string) int {
	n := 0
	for _, r := range s {
		n += utf16Units(r)
	}
	return n
}

func utf16Units(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// cut splits s after at most limit UTF-16 units, on a rune boundary. At
// least one rune goes to head, so a caller looping on rest always ends.
func cut(s string, limit int) (head, rest string) {
	n := 0
	for i, r := range s {
		u := utf16Units(r)
		if n+u > limit && i > 0 {
			return s[:i], s[i:]
		}
		n += u
	}
	return s, ""
}

// line is one line of a reply, and whether it is inside a code block.
type line struct {
	text string
	code bool
}

// replyLines reads a reply into lines, marking those inside ``` fences as
// code; the fence lines themselves go. An unclosed fence runs to the end.
func replyLines(s string) []line {
	var out []line
	code := false
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			code = !code
			continue
		}
		out = append(out, line{text: l, code: code})
	}
	return out
}

// renderReply turns a reply into HTML messages, each under limit once
// parsed: every string escaped, code blocks in <pre>, broken between
// lines where it can and inside a line only when the line alone is too
// long. Pieces with nothing visible are dropped.
func renderReply(s string, limit int) []string {
	limit = max(limit, 2) // room for any one rune
	var pieces [][]line
	var cur []line
	curWidth := 0
	flush := func() {
		if len(cur) > 0 {
			pieces = append(pieces, cur)
		}
		cur, curWidth = nil, 0
	}
	for _, l := range replyLines(s) {
		sep := 0
		if len(cur) > 0 {
			sep = 1
		}
		if w := width(l.text); curWidth+sep+w <= limit {
			cur = append(cur, l)
			curWidth += sep + w
			continue
		}
		flush()
		for width(l.text) > limit {
			var head string
			head, l.text = cut(l.text, limit)
			pieces = append(pieces, []line{{text: head, code: l.code}})
		}
		cur, curWidth = []line{l}, width(l.text)
	}
	flush()
	var out []string
	for _, p := range pieces {
		if h, visible := lineHTML(p); visible {
			out = append(out, h)
		}
	}
	return out
}

// lineHTML renders lines, wrapping each run of code lines in one <pre>.
func lineHTML(lines []line) (string, bool) {
	var b strings.Builder
	visible := false
	for i, l := range lines {
		if l.code && (i == 0 || !lines[i-1].code) {
			b.WriteString("<pre>")
		}
		b.WriteString(html.EscapeString(l.text))
		if l.code && (i == len(lines)-1 || !lines[i+1].code) {
			b.WriteString("</pre>")
		} else if i < len(lines)-1 {
			b.WriteByte('\n')
		}
		visible = visible || strings.TrimSpace(l.text) != ""
	}
	return b.String(), visible
}

// truncate shortens s to limit UTF-16 units, marking the cut.
func truncate(s string, limit int) string {
	if width(s) <= limit {
		return s
	}
	head, _ := cut(s, max(limit-1, 1))
	return head + "…"
}

// approval is an approval request rendered for Telegram: the message and,
// when the detail does not fit in it, the whole detail as a file.
type approval struct {
	HTML string
	// File holds the whole detail when the message shows only its start.
	File     []byte
	FileName string
}

// renderApproval renders a request as HTML whose parsed text fits one
// message with room for the outcome line: what asks, the policy's note,
// the exact detail in <pre>, and when the request expires. A detail too
// long to show whole is cut, and sent whole as a file.
func renderApproval(req contracts.ApprovalRequest, loc *time.Location, now time.Time) approval {
	tool := truncate(req.Tool, 64)
	note := truncate(req.Note, maxNote)
	expires := ""
	if !req.Expires.IsZero() {
		expires = fmt.Sprintf("\nExpires at %s (in %s) if you do not answer.", req.Expires.In(loc).Format("15:04"), req.Expires.Sub(now).Round(time.Minute))
	}
	header := fmt.Sprintf("shelldon asks to use %s\n%s\n", tool, note)
	headerHTML := fmt.Sprintf("shelldon asks to use <b>%s</b>\n<i>%s</i>\n", html.EscapeString(tool), html.EscapeString(note))
	if req.Always != "" {
		// The rule in words, before the button that grants it.
		rule := truncate(req.Always, maxNote)
		header += "🔁 Always for this rule: " + rule + "\n"
		headerHTML += "🔁 <b>Always for this rule</b>: " + html.EscapeString(rule) + "\n"
	}
	room := maxMessage - outcomeRoom - width(header) - width(expires)
	out := approval{}
	detail, trailer := req.Detail, ""
	if width(detail) > room {
		total := utf8.RuneCountInString(detail)
		// The cut note's own width depends on the numbers in it; a
		// generous fixed allowance keeps the arithmetic simple.
		const noteAllowance = 100
		detail, _ = cut(detail, max(room-noteAllowance, 1))
		trailer = fmt.Sprintf("\n(%d of %d characters shown; the whole text is in the file above)", utf8.RuneCountInString(detail), total)
		out.File, out.FileName = capFile([]byte(req.Detail)), fileName(req.Turn, "request", ".txt")
	}
	out.HTML = headerHTML + "<pre>" + html.EscapeString(detail) + "</pre>" + trailer + html.EscapeString(expires)
	return out
}

// capFile cuts a file to maxFile bytes, saying so at its end.
func capFile(file []byte) []byte {
	if len(file) <= maxFile {
		return file
	}
	return append([]byte(strings.ToValidUTF8(string(file[:maxFile]), "")),
		fmt.Sprintf("\n\n(cut: the first %d of %d bytes)\n", maxFile, len(file))...)
}

// fileName names a file the transport sends: prefix, then name with
// only safe characters kept (a request's key, a name core gave), then
// suffix.
func fileName(name, prefix, suffix string) string {
	return prefix + "-" + contracts.SafeFileName(name) + suffix
}

// outcomeLine is what an approval message says once it is settled.
func outcomeLine(outcome string, at time.Time, loc *time.Location) string {
	when := at.In(loc).Format("15:04")
	switch outcome {
	case contracts.ApprovalApproved:
		return "✅ Approved at " + when
	case contracts.ApprovalDenied:
		return "❌ Denied at " + when
	case contracts.ApprovalExpired:
		return "⌛ Expired at " + when + ": nothing was done"
	case contracts.ApprovalReplaced:
		return "↻ Replaced by a newer request at " + when + ": nothing was done"
	}
	return "No longer waiting for an answer"
}

// settled appends the outcome to a rendered approval.
func settled(approvalHTML, outcome string, at time.Time, loc *time.Location) string {
	return approvalHTML + "\n\n<b>" + html.EscapeString(outcomeLine(outcome, at, loc)) + "</b>"
}

// approvalKeyboard is the Approve/Deny pair for the request of turn,
// and under it "Always for …" when the request offers a rule (whose
// words the message shows above the buttons).
func approvalKeyboard(turn string, always bool) (*models.InlineKeyboardMarkup, error) {
	for _, prefix := range []string{approvePrefix, denyPrefix, alwaysPrefix} {
		if len(prefix+turn) > maxCallbackData {
			return nil, fmt.Errorf("request key %q is too long for a button's %d bytes", turn, maxCallbackData)
		}
	}
	rows := [][]models.InlineKeyboardButton{{
		{Text: "✅ Approve", CallbackData: approvePrefix + turn},
		{Text: "❌ Deny", CallbackData: denyPrefix + turn},
	}}
	if always {
		rows = append(rows, []models.InlineKeyboardButton{{Text: "🔁 Always for this rule", CallbackData: alwaysPrefix + turn}})
	}
	return &models.InlineKeyboardMarkup{InlineKeyboard: rows}, nil
}

// parseCallback reads a button's data: "a:" approves, "r:" approves and
// grants the rule offered, "d:" denies; anything else is not one of ours.
func parseCallback(data string) (turn string, approve, always, ok bool) {
	prefix, turn, found := strings.Cut(data, ":")
	turn = strings.TrimSpace(turn)
	if !found || turn == "" {
		return "", false, false, false
	}
	switch prefix + ":" {
	case approvePrefix:
		return turn, true, false, true
	case alwaysPrefix:
		return turn, true, true, true
	case denyPrefix:
		return turn, false, false, true
	}
	return "", false, false, false
}
