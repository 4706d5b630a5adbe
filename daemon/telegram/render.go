package telegram

import (
	"fmt"
	"html"
	"strings"
	"unicode/utf8"

	"github.com/go-telegram/bot/models"

	"shelldon/contracts"
)

// maxMessage is Telegram's limit on a message's text once its HTML is
// parsed, in UTF-16 code units.
const maxMessage = 4096

// maxNote bounds the policy note on an approval, so the detail keeps room.
const maxNote = 512

// Callback data prefixes of the approval buttons.
const (
	approvePrefix = "a:"
	denyPrefix    = "d:"
)

// Outcomes appended to an approval message once it is decided.
const (
	approvedMark = "✅ Approved"
	deniedMark   = "❌ Denied"
)

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

// splitText breaks s into pieces of at most limit UTF-16 units, breaking
// between lines where it can and inside a line only when the line alone is
// too long. The newline at a break is dropped; other lines, blank ones
// too, are kept.
func splitText(s string, limit int) []string {
	if s == "" {
		return nil
	}
	limit = max(limit, 2) // room for any one rune
	var pieces []string
	var cur strings.Builder
	curWidth, started := 0, false
	for _, line := range strings.Split(s, "\n") {
		w := width(line)
		sep := 0
		if started {
			sep = 1
		}
		if curWidth+sep+w <= limit {
			if started {
				cur.WriteByte('\n')
			}
			cur.WriteString(line)
			curWidth += sep + w
			started = true
			continue
		}
		if started {
			pieces = append(pieces, cur.String())
			cur.Reset()
		}
		for width(line) > limit {
			var head string
			head, line = cut(line, limit)
			pieces = append(pieces, head)
		}
		cur.WriteString(line)
		curWidth, started = width(line), true
	}
	if started {
		pieces = append(pieces, cur.String())
	}
	return pieces
}

// truncate shortens s to limit UTF-16 units, saying how much was left out.
func truncate(s string, limit int) string {
	if width(s) <= limit {
		return s
	}
	head, _ := cut(s, max(limit-1, 1))
	return head + "…"
}

// approvalText renders an approval request as HTML whose parsed text fits
// one message: the detail, in a <pre> block, is cut with a note when the
// whole would not fit.
func approvalText(req contracts.ApprovalRequest) string {
	tool := truncate(req.Tool, 64)
	note := truncate(req.Note, maxNote)
	header := fmt.Sprintf("shelldon asks to use %s\n%s\n", tool, note)
	headerHTML := fmt.Sprintf("shelldon asks to use <b>%s</b>\n<i>%s</i>\n", html.EscapeString(tool), html.EscapeString(note))
	detail := req.Detail
	room := maxMessage - width(header)
	trailer := ""
	if width(detail) > room {
		total := utf8.RuneCountInString(detail)
		// The cut note's own width depends on the numbers in it; a
		// generous fixed allowance keeps the arithmetic simple.
		const noteAllowance = 80
		detail, _ = cut(detail, max(room-noteAllowance, 1))
		trailer = fmt.Sprintf("\n(detail cut: %d of %d characters shown)", utf8.RuneCountInString(detail), total)
	}
	return headerHTML + "<pre>" + html.EscapeString(detail) + "</pre>" + trailer
}

// approvalKeyboard is the Approve/Deny pair for turn.
func approvalKeyboard(turn string) *models.InlineKeyboardMarkup {
	return &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{
		{Text: "✅ Approve", CallbackData: approvePrefix + turn},
		{Text: "❌ Deny", CallbackData: denyPrefix + turn},
	}}}
}

// parseCallback reads a button's data. Only "a:" approves; any other
// prefix with a readable turn denies; data with no turn is not a decision.
func parseCallback(data string) (turn string, approve, ok bool) {
	prefix, turn, found := strings.Cut(data, ":")
	turn = strings.TrimSpace(turn)
	if !found || turn == "" {
		return "", false, false
	}
	return turn, prefix+":" == approvePrefix, true
}
