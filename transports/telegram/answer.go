package telegram

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"shelldon/daemon/state"
)

// Bounds on what one getUpdates answer makes the transport hold. The
// answer is read as a stream, an update at a time, so neither bound
// depends on how long the answer is.
const (
	// maxUpdateBytes bounds one update: far past what Telegram sends (a
	// text of 4096 characters with its entities, a photo's sizes), and
	// within a bus frame. A longer one is refused where it is read: it
	// is confirmed to the server like any other, and the owner told.
	maxUpdateBytes = 256 << 10
	// maxAnswerBytes bounds the updates kept of one answer; those past it
	// are left unconfirmed, and the server hands them over again in the
	// next answer.
	maxAnswerBytes = 4 << 20
	// maxFieldBytes bounds any other field of the answer (ok, error_code,
	// description, parameters).
	maxFieldBytes = 64 << 10
)

// updatesAnswer is what a getUpdates answer said.
type updatesAnswer struct {
	OK          bool   `json:"ok"`
	ErrorCode   int    `json:"error_code"`
	Description string `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
	// items are the updates kept, in order: an oversized one as a
	// refusal (oversizedKey).
	items []state.InboxItem
}

// oversizedKey marks the stored stand-in of an update refused for its
// size: {"update_id": N, "shelldon_oversized": {...}}.
const oversizedKey = "shelldon_oversized"

// oversized is what is known of an update refused for its size: how long
// it was, and, when its first maxUpdateBytes said, who sent it where.
type oversized struct {
	Bytes int64 `json:"bytes"`
	From  int64 `json:"from,omitempty"`
	Chat  int64 `json:"chat,omitempty"`
}

// readUpdatesAnswer reads a getUpdates answer from r, keeping at most
// maxAnswerBytes of updates and maxUpdateBytes of each: past the first,
// it stops reading, and takes the answer for a success (the Bot API
// sends a result with ok true alone); an update past the second becomes
// a stand-in that says so. Every other field is read up to maxFieldBytes.
func readUpdatesAnswer(r io.Reader) (updatesAnswer, error) {
	var a updatesAnswer
	s := &jsonStream{r: bufio.NewReader(r)}
	err := s.object(func(key string) error {
		if key == "result" {
			full, err := s.updates(&a)
			if err == nil && full {
				a.OK = true
				return errAnswerFull
			}
			return err
		}
		field := &bounded{limit: maxFieldBytes}
		if err := s.value(field); err != nil {
			return err
		}
		if field.over() {
			return fmt.Errorf("%w: its field %q is over %d KiB", errNotAnswer, key, maxFieldBytes>>10)
		}
		// A field of the wrong type keeps its zero; an unknown one is
		// no concern.
		switch key {
		case "ok":
			json.Unmarshal(field.kept, &a.OK)
		case "error_code":
			json.Unmarshal(field.kept, &a.ErrorCode)
		case "description":
			json.Unmarshal(field.kept, &a.Description)
		case "parameters":
			json.Unmarshal(field.kept, &a.Parameters)
		}
		return nil
	})
	if errors.Is(err, errAnswerFull) {
		return a, nil
	}
	return a, err
}

// errAnswerFull stops reading an answer once maxAnswerBytes of updates
// are kept.
var errAnswerFull = errors.New("answer full")

// errNotAnswer is wrapped when what was read is not a Bot API answer.
var errNotAnswer = errors.New("not JSON")

// updates reads the result array into a, and says whether it stopped at
// maxAnswerBytes, leaving the rest unread.
func (s *jsonStream) updates(a *updatesAnswer) (full bool, err error) {
	if err := s.expect('['); err != nil {
		return false, err
	}
	kept := 0
	for first := true; ; first = false {
		c, err := s.next()
		if err != nil {
			return false, err
		}
		switch {
		case c == ']' && first:
			return false, nil
		case first:
			s.r.UnreadByte()
		case c == ']':
			return false, nil
		case c != ',':
			return false, s.unexpected(c, "',' or ']'")
		}
		update := &bounded{limit: maxUpdateBytes}
		if err := s.value(update); err != nil {
			return false, err
		}
		it, err := inboxItem(update)
		if err != nil {
			return false, err
		}
		a.items = append(a.items, it)
		if kept += len(it.Body); kept >= maxAnswerBytes {
			return true, nil
		}
	}
}

// inboxItem is the update read into b as the inbox keeps it: itself, or
// for one past maxUpdateBytes a stand-in that says so.
func inboxItem(b *bounded) (state.InboxItem, error) {
	if !b.over() {
		var head struct {
			ID int64 `json:"update_id"`
		}
		if err := json.Unmarshal(b.kept, &head); err != nil || head.ID <= 0 {
			return state.InboxItem{}, fmt.Errorf("%w: an update without an id in %.200s", errNotAnswer, b.kept)
		}
		return state.InboxItem{ID: head.ID, Body: b.kept}, nil
	}
	id, o := headOf(b.kept)
	if id <= 0 {
		return state.InboxItem{}, fmt.Errorf("%w: an update of %d bytes without an id in its first %d KiB", errNotAnswer, b.n, maxUpdateBytes>>10)
	}
	o.Bytes = b.n
	body, err := json.Marshal(map[string]any{"update_id": id, oversizedKey: o})
	if err != nil {
		return state.InboxItem{}, err
	}
	return state.InboxItem{ID: id, Body: body}, nil
}

// headOf finds, in the first bytes of an update cut short, its id and
// who sent it where (a message's sender and chat, a tap's sender), as
// far as they come before the cut.
func headOf(prefix []byte) (id int64, o oversized) {
	s := &jsonStream{r: bufio.NewReader(bytes.NewReader(prefix))}
	number := func(into *int64) error {
		b := &bounded{limit: 32}
		if err := s.value(b); err != nil {
			return err
		}
		*into, _ = strconv.ParseInt(string(b.kept), 10, 64)
		return nil
	}
	idOf := func(into *int64) func(string) error {
		return func(key string) error {
			if key == "id" {
				return number(into)
			}
			return s.skip()
		}
	}
	s.object(func(key string) error {
		switch key {
		case "update_id":
			return number(&id)
		case "message", "edited_message", "callback_query":
			return s.object(func(key string) error {
				switch key {
				case "from":
					return s.object(idOf(&o.From))
				case "chat":
					return s.object(idOf(&o.Chat))
				}
				return s.skip()
			})
		}
		return s.skip()
	})
	return id, o
}

// bounded keeps the first limit bytes written to it, and counts them all.
type bounded struct {
	limit int
	kept  []byte
	n     int64
}

func (b *bounded) WriteByte(c byte) error {
	b.n++
	if len(b.kept) < b.limit {
		b.kept = append(b.kept, c)
	}
	return nil
}

// over says whether more than limit bytes were written.
func (b *bounded) over() bool { return b.n > int64(b.limit) }

// jsonStream reads JSON a byte at a time, so that a value's size costs
// only what the caller keeps of it.
type jsonStream struct {
	r *bufio.Reader
}

// next is the next byte that is not white space.
func (s *jsonStream) next() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return 0, s.eof(err)
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c, nil
	}
}

func (s *jsonStream) eof(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (s *jsonStream) unexpected(c byte, want string) error {
	return fmt.Errorf("%w: found %q where %s was expected", errNotAnswer, c, want)
}

// expect reads the byte want, after white space.
func (s *jsonStream) expect(want byte) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	if c != want {
		return s.unexpected(c, strconv.QuoteRune(rune(want)))
	}
	return nil
}

// name reads the rest of a string whose quote was read: an object's key,
// of which the first 64 bytes are kept, raw.
func (s *jsonStream) name() (string, error) {
	b := &bounded{limit: 64}
	if err := s.str(b); err != nil {
		return "", err
	}
	if b.over() {
		return string(b.kept), nil // no key of the Bot API's
	}
	return string(b.kept[:len(b.kept)-1]), nil // without the closing quote
}

// str copies the rest of a string whose opening quote was read, the
// closing quote included.
func (s *jsonStream) str(w io.ByteWriter) error {
	for escaped := false; ; {
		c, err := s.r.ReadByte()
		if err != nil {
			return s.eof(err)
		}
		w.WriteByte(c)
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			return nil
		}
	}
}

// value copies the next value, whatever it is, to w.
func (s *jsonStream) value(w io.ByteWriter) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	w.WriteByte(c)
	switch c {
	case '"':
		return s.str(w)
	case '{', '[':
		for depth := 1; depth > 0; {
			c, err := s.r.ReadByte()
			if err != nil {
				return s.eof(err)
			}
			w.WriteByte(c)
			switch c {
			case '"':
				if err := s.str(w); err != nil {
					return err
				}
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
		}
		return nil
	}
	// A number, true, false or null: up to the next delimiter.
	for {
		c, err := s.r.ReadByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch c {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return s.r.UnreadByte()
		}
		w.WriteByte(c)
	}
}

// skip reads past the next value.
func (s *jsonStream) skip() error { return s.value(&bounded{}) }

// object reads an object, calling field for each key with the stream at
// its value, which field must read.
func (s *jsonStream) object(field func(key string) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		c, err := s.next()
		if err != nil {
			return err
		}
		if c == '}' {
			return nil
		}
		if !first {
			if c != ',' {
				return s.unexpected(c, "',' or '}'")
			}
			if c, err = s.next(); err != nil {
				return err
			}
		}
		if c != '"' {
			return s.unexpected(c, "a field's name")
		}
		key, err := s.name()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
	}
}
