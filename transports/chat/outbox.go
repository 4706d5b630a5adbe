package chat

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"

	"shelldon/contracts"
)

// The terminal keeps each message the owner types until core confirms
// that it has kept it (an INBOUND_ACK of the message's Ref), and sends
// what core did not confirm again whenever it joins a core: a message
// typed while core is away (restarting, not started yet) goes once it is
// there, and one sent into a core that stopped before keeping it goes to
// the next. Core recognises a message it kept already by its Ref, so a
// message is never answered twice. What the terminal keeps lives as long
// as the terminal: quitting it lets go of what core never confirmed, and
// the terminal says so.

// maxUnconfirmed bounds the messages waiting for core's confirmation.
const maxUnconfirmed = 32

// outbox holds the messages core has not confirmed, oldest first.
type outbox struct {
	session string // tells this terminal's refs from any other's
	next    int
	waiting []contracts.Inbound
}

func newOutbox() *outbox {
	var b [8]byte
	rand.Read(b[:])
	return &outbox{session: hex.EncodeToString(b[:])}
}

// full says no other message can be kept.
func (o *outbox) full() bool { return len(o.waiting) >= maxUnconfirmed }

// add keeps a message to send and returns it, with its ref.
func (o *outbox) add(text string) contracts.Inbound {
	o.next++
	in := contracts.Inbound{Chat: TransportName, Text: text, Ref: fmt.Sprintf("%s-%d", o.session, o.next)}
	o.waiting = append(o.waiting, in)
	return in
}

// confirm lets go of the message ref, which core has kept.
func (o *outbox) confirm(ref string) {
	for i, in := range o.waiting {
		if in.Ref == ref {
			o.waiting = append(o.waiting[:i], o.waiting[i+1:]...)
			return
		}
	}
}

// maxShownKeys bounds the keys of replies a terminal remembers showing:
// core sends a reply again within a minute or at its start, long before
// this many more have come.
const maxShownKeys = 64

// shownKeys are the keys of the replies shown, the latest maxShownKeys.
type shownKeys struct {
	keys []string
}

// seen reports whether the reply key was shown already, and remembers it
// as shown; a reply without a key is never the same as another.
func (s *shownKeys) seen(key string) bool {
	if key == "" {
		return false
	}
	if slices.Contains(s.keys, key) {
		return true
	}
	if len(s.keys) == maxShownKeys {
		s.keys = s.keys[1:]
	}
	s.keys = append(s.keys, key)
	return false
}
