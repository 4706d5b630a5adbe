package telegramtest

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// entity is a MessageEntity as the Bot API returns it. Offsets and lengths
// count UTF-16 code units, as Telegram's do.
type entity struct {
	Type          string `json:"type"`
	Offset        int    `json:"offset"`
	Length        int    `json:"length"`
	URL           string `json:"url,omitempty"`
	Language      string `json:"language,omitempty"`
	CustomEmojiID string `json:"custom_emoji_id,omitempty"`
}

// parseError says why a parse_mode HTML text was refused, worded like
// Telegram's "can't parse entities" answers.
type parseError struct {
	reason string
	// offset is the byte offset in the sent text; -1 when Telegram names none.
	offset int
}

func (e *parseError) Error() string {
	if e.offset < 0 {
		return "can't parse entities: " + e.reason
	}
	return fmt.Sprintf("can't parse entities: %s at byte offset %d", e.reason, e.offset)
}

// htmlEntityTypes maps every tag Telegram accepts to the entity it makes.
var htmlEntityTypes = map[string]string{
	"b": "bold", "strong": "bold",
	"i": "italic", "em": "italic",
	"u": "underline", "ins": "underline",
	"s": "strikethrough", "strike": "strikethrough", "del": "strikethrough",
	"span": "spoiler", "tg-spoiler": "spoiler",
	"a":          "text_link",
	"code":       "code",
	"pre":        "pre",
	"blockquote": "blockquote",
	"tg-emoji":   "custom_emoji",
}

// openTag is a start tag still waiting for its end tag.
type openTag struct {
	name string
	at   int // byte offset of its '<'
	// start is where its content begins in the parsed text, in UTF-16 units.
	start int
	// value is the href of an a, the class of a span, the emoji-id of a tg-emoji.
	value      string
	language   string
	expandable bool
}

// htmlParser turns a parse_mode HTML text into plain text and entities.
type htmlParser struct {
	src      string
	pos      int
	text     strings.Builder
	units    int
	open     []openTag
	entities []entity
}

// parseHTML parses src as Telegram's parse_mode HTML does: only Telegram's
// tags, properly nested; only &lt; &gt; &amp; &quot; and numeric character
// references. Stricter than Telegram in one way: an '&' that starts no
// entity is refused, because Telegram's documentation requires it escaped.
func parseHTML(src string) (string, []entity, error) {
	p := &htmlParser{src: src}
	for p.pos < len(src) {
		var err error
		switch {
		case src[p.pos] == '&':
			err = p.characterReference()
		case strings.HasPrefix(src[p.pos:], "</"):
			err = p.endTag()
		case src[p.pos] == '<':
			err = p.startTag()
		default:
			r, size := utf8.DecodeRuneInString(src[p.pos:])
			p.appendRune(r)
			p.pos += size
		}
		if err != nil {
			return "", nil, err
		}
	}
	if n := len(p.open); n > 0 {
		return "", nil, &parseError{reason: fmt.Sprintf("Can't find end tag corresponding to start tag %q", p.open[n-1].name), offset: -1}
	}
	// Entities were recorded as their tags closed, inner first; reversed,
	// the stable sort puts an outer entity before an inner one of the same
	// span, as Telegram does.
	slices.Reverse(p.entities)
	sortEntities(p.entities)
	return p.text.String(), p.entities, nil
}

func (p *htmlParser) appendRune(r rune) {
	p.text.WriteRune(r)
	p.units += utf16Len(r)
}

func (p *htmlParser) characterReference() error {
	r, size, ok := decodeCharacterReference(p.src[p.pos:])
	if !ok {
		return &parseError{reason: "Character entity expected", offset: p.pos}
	}
	p.appendRune(r)
	p.pos += size
	return nil
}

// maxReferenceLen bounds the search for the ';' closing a character
// reference; "&#x0010FFFF;" is the longest sensible one.
const maxReferenceLen = 16

// decodeCharacterReference decodes the reference s starts with ("&lt;",
// "&#65;", "&#x41;") and reports how many bytes it took.
func decodeCharacterReference(s string) (r rune, size int, ok bool) {
	end := strings.IndexByte(s[:min(len(s), maxReferenceLen)], ';')
	if end < 2 {
		return 0, 0, false
	}
	name := s[1:end]
	switch name {
	case "lt":
		return '<', end + 1, true
	case "gt":
		return '>', end + 1, true
	case "amp":
		return '&', end + 1, true
	case "quot":
		return '"', end + 1, true
	}
	digits, base := strings.CutPrefix(name, "#")
	if !base {
		return 0, 0, false
	}
	radix := 10
	if hex, isHex := strings.CutPrefix(digits, "x"); isHex {
		digits, radix = hex, 16
	} else if hex, isHex := strings.CutPrefix(digits, "X"); isHex {
		digits, radix = hex, 16
	}
	if digits == "" || strings.ContainsAny(digits, "+-_") {
		return 0, 0, false
	}
	code, err := strconv.ParseUint(digits, radix, 32)
	if err != nil || code == 0 || !utf8.ValidRune(rune(code)) {
		return 0, 0, false
	}
	return rune(code), end + 1, true
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func (p *htmlParser) scanName(from int) int {
	for from < len(p.src) && isNameByte(p.src[from]) {
		from++
	}
	return from
}

func (p *htmlParser) skipSpace(from int) int {
	for from < len(p.src) && strings.IndexByte(" \t\r\n", p.src[from]) >= 0 {
		from++
	}
	return from
}

func (p *htmlParser) startTag() error {
	at := p.pos
	nameEnd := p.scanName(at + 1)
	name := strings.ToLower(p.src[at+1 : nameEnd])
	if _, ok := htmlEntityTypes[name]; !ok {
		return &parseError{reason: fmt.Sprintf("Unsupported start tag %q", name), offset: at}
	}
	tag := openTag{name: name, at: at, start: p.units}
	unclosed := &parseError{reason: "Unclosed start tag", offset: at}
	i := nameEnd
	for {
		i = p.skipSpace(i)
		if i >= len(p.src) {
			return unclosed
		}
		if p.src[i] == '>' {
			i++
			break
		}
		attrEnd := p.scanName(i)
		if attrEnd == i {
			return &parseError{reason: fmt.Sprintf("Empty attribute name in the tag %q", name), offset: i}
		}
		attr := strings.ToLower(p.src[i:attrEnd])
		i = p.skipSpace(attrEnd)
		var value string
		if i < len(p.src) && p.src[i] == '=' {
			var err error
			if value, i, err = p.attributeValue(p.skipSpace(i+1), name, attr, unclosed); err != nil {
				return err
			}
		}
		tag.setAttribute(attr, value)
	}
	switch {
	case name == "span" && tag.value != "tg-spoiler":
		return &parseError{reason: `Tag "span" must have class "tg-spoiler"`, offset: at}
	case name == "tg-emoji" && !isDecimal(tag.value):
		return &parseError{reason: `Custom emoji entity must contain a tag "emoji-id"`, offset: at}
	}
	p.open = append(p.open, tag)
	p.pos = i
	return nil
}

// attributeValue reads a quoted or bare attribute value starting at i and
// decodes its character references.
func (p *htmlParser) attributeValue(i int, tag, attr string, unclosed error) (value string, next int, err error) {
	if i >= len(p.src) {
		return "", 0, unclosed
	}
	var raw string
	valueStart := i
	if quote := p.src[i]; quote == '"' || quote == '\'' {
		valueStart++
		end := strings.IndexByte(p.src[valueStart:], quote)
		if end < 0 {
			return "", 0, unclosed
		}
		raw, next = p.src[valueStart:valueStart+end], valueStart+end+1
	} else {
		next = i
		for next < len(p.src) && strings.IndexByte(" \t\r\n>", p.src[next]) < 0 {
			next++
		}
		if next == i {
			return "", 0, &parseError{reason: fmt.Sprintf("Expected value of the attribute %q of the tag %q", attr, tag), offset: i}
		}
		raw = p.src[i:next]
	}
	var b strings.Builder
	for j := 0; j < len(raw); {
		if raw[j] != '&' {
			b.WriteByte(raw[j])
			j++
			continue
		}
		r, size, ok := decodeCharacterReference(raw[j:])
		if !ok {
			return "", 0, &parseError{reason: "Character entity expected", offset: valueStart + j}
		}
		b.WriteRune(r)
		j += size
	}
	return b.String(), next, nil
}

// setAttribute keeps the attributes Telegram reads; it ignores the rest, as
// Telegram does.
func (t *openTag) setAttribute(attr, value string) {
	switch {
	case t.name == "a" && attr == "href",
		t.name == "span" && attr == "class",
		t.name == "tg-emoji" && attr == "emoji-id":
		t.value = value
	case t.name == "code" && attr == "class":
		if language, ok := strings.CutPrefix(value, "language-"); ok {
			t.language = language
		}
	case t.name == "blockquote" && attr == "expandable":
		t.expandable = true
	}
}

func (p *htmlParser) endTag() error {
	at := p.pos
	nameEnd := p.scanName(at + 2)
	name := strings.ToLower(p.src[at+2 : nameEnd])
	i := p.skipSpace(nameEnd)
	if i >= len(p.src) || p.src[i] != '>' {
		return &parseError{reason: "Unclosed end tag", offset: at}
	}
	n := len(p.open)
	if n == 0 {
		return &parseError{reason: "Unexpected end tag", offset: at}
	}
	if top := p.open[n-1]; top.name != name {
		return &parseError{reason: fmt.Sprintf("Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", at, top.name, name), offset: -1}
	}
	tag := p.open[n-1]
	p.open = p.open[:n-1]
	p.closeTag(tag)
	p.pos = i + 1
	return nil
}

// closeTag records the entity a closed tag makes.
func (p *htmlParser) closeTag(tag openTag) {
	e := entity{Type: htmlEntityTypes[tag.name], Offset: tag.start, Length: p.units - tag.start}
	switch tag.name {
	case "a":
		if tag.value == "" {
			return // Telegram keeps the text of a link without href, unlinked
		}
		e.URL = tag.value
	case "code":
		// <pre><code class="language-x"> gives the pre its language.
		if n := len(p.open); n > 0 && p.open[n-1].name == "pre" && tag.language != "" {
			p.open[n-1].language = tag.language
			return
		}
	case "pre":
		e.Language = tag.language
	case "blockquote":
		if tag.expandable {
			e.Type = "expandable_blockquote"
		}
	case "tg-emoji":
		e.CustomEmojiID = tag.value
	}
	if e.Length > 0 {
		p.entities = append(p.entities, e)
	}
}

func isDecimal(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// sortEntities orders entities as Telegram answers them: by offset, the
// longer first.
func sortEntities(es []entity) {
	slices.SortStableFunc(es, func(a, b entity) int {
		return cmp.Or(cmp.Compare(a.Offset, b.Offset), cmp.Compare(b.Length, a.Length))
	})
}

func utf16Len(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// utf16Units is the length Telegram's limits count.
func utf16Units(s string) int {
	n := 0
	for _, r := range s {
		n += utf16Len(r)
	}
	return n
}

// isBlank reports the characters Telegram strips from both ends of a text.
func isBlank(r rune) bool {
	return unicode.IsSpace(r) || r >= '\u200b' && r <= '\u200f' || r == '\u2060' || r == '\ufeff'
}

// trimBlank strips blanks from both ends of text, as Telegram does before it
// stores a message, and moves the entities along.
func trimBlank(text string, es []entity) (string, []entity) {
	trimmed := strings.TrimLeftFunc(text, isBlank)
	lead := utf16Units(text[:len(text)-len(trimmed)])
	trimmed = strings.TrimRightFunc(trimmed, isBlank)
	size := utf16Units(trimmed)
	var kept []entity
	for _, e := range es {
		start, end := max(e.Offset-lead, 0), min(e.Offset+e.Length-lead, size)
		if end > start {
			e.Offset, e.Length = start, end-start
			kept = append(kept, e)
		}
	}
	return trimmed, kept
}
