package telegramtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxUpdatesLimit is the most updates one getUpdates answer carries.
const maxUpdatesLimit = 100

// SendText queues a text message from user from in their private chat with
// the bot and returns its update id; update ids start at 1000 and go up by
// one. A text starting with a /command gets
// the bot_command entity Telegram adds.
func (s *Server) SendText(from int64, text string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chatWith(from)
	m := c.add(&message{text: text, html: text})
	if command, _, _ := strings.Cut(text, " "); len(command) > 1 && command[0] == '/' {
		m.entities = []entity{{Type: "bot_command", Length: utf16Units(command)}}
	}
	w := s.wire(c, m)
	return s.queue(wireUpdate{Message: &w})
}

// SendSticker queues a message from user from carrying a sticker and no
// text, and returns its update id.
func (s *Server) SendSticker(from int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chatWith(from)
	w := s.wire(c, c.add(&message{sticker: true}))
	return s.queue(wireUpdate{Message: &w})
}

// Tap queues a callback_query from user from, as if they tapped a button
// carrying data under message messageID of chat. The query carries that
// message in its current state, as Telegram does. A tap on a message that
// does not exist (a forged or stale tap) is still sent, carrying a minimal
// message: id, chat and date, no sender, text or keyboard.
func (s *Server) Tap(from int64, chat, messageID int64, data string) (updateID int64, queryID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tapper := s.chatWith(from)
	tapped := wireMessage{MessageID: messageID, Chat: wireChat{ID: chat, Type: "private"}, Date: time.Now().Unix()}
	if c, ok := s.chats[chat]; ok {
		tapped.Chat = c.wire()
		if m := c.find(messageID); m != nil {
			tapped = s.wire(c, m)
		}
	}
	s.nextQuery++
	queryID = strconv.FormatInt(4_000_000_000_000_000_000+s.nextQuery, 10)
	s.queries[queryID] = false
	updateID = s.queue(wireUpdate{CallbackQuery: &wireCallbackQuery{
		ID: queryID, From: tapper.owner, Message: tapped,
		ChatInstance: strconv.FormatInt(-chat*7-1, 10), Data: data,
	}})
	return updateID, queryID
}

// StartIDsAgainAt makes id the next update's id, as Telegram does after a
// week without updates, when it chooses the next id at random: often
// below the ids a bot has seen.
func (s *Server) StartIDsAgainAt(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextUpdate = id
}

// queue gives u the next update id and queues it. Callers hold s.mu.
func (s *Server) queue(u wireUpdate) int64 {
	u.UpdateID = s.nextUpdate
	s.nextUpdate++
	body, err := json.Marshal(u)
	if err != nil {
		panic(fmt.Sprintf("telegramtest: encode update: %v", err)) // only plain data goes in; cannot fail
	}
	s.pending = append(s.pending, queuedUpdate{id: u.UpdateID, body: body})
	s.notify()
	return u.UpdateID
}

// Delivered reports how many getUpdates answers carried the update.
func (s *Server) Delivered(updateID int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.delivered[updateID]
}

// Confirmed returns the highest update id confirmed, that is, below the
// offset of some getUpdates call; 0 when none is.
func (s *Server) Confirmed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.confirmed
}

// confirm forgets the updates an offset confirms. A negative offset keeps
// only the last -offset updates, as Telegram's does. Callers hold s.mu.
func (s *Server) confirm(offset int64) {
	forget := 0
	switch {
	case offset > 0:
		// Every update below the offset, wherever it stands in the
		// queue: one whose id started again lower is forgotten unseen.
		s.pending = slices.DeleteFunc(s.pending, func(u queuedUpdate) bool { return u.id < offset })
		s.confirmed = max(s.confirmed, min(offset-1, s.nextUpdate-1))
	case offset < 0:
		forget = len(s.pending) + int(max(offset, -int64(len(s.pending))))
		if forget > 0 {
			s.confirmed = max(s.confirmed, s.pending[forget-1].id)
		}
	}
	s.pending = s.pending[forget:]
}

// getUpdates answers the pending updates, long-polling up to timeout
// seconds while there are none.
func (s *Server) getUpdates(ctx context.Context, req request) (any, error) {
	offset, err := req.int("offset", 0)
	if err != nil {
		return nil, err
	}
	limit, err := req.int("limit", maxUpdatesLimit)
	if err != nil {
		return nil, err
	}
	if limit <= 0 || limit > maxUpdatesLimit {
		limit = maxUpdatesLimit
	}
	timeout, err := req.int("timeout", 0)
	if err != nil {
		return nil, err
	}

	s.mu.Lock()
	s.confirm(offset)
	s.pollGeneration++
	generation := s.pollGeneration
	s.polling++
	s.notify()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.polling--
		s.notify()
	}()

	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(time.Duration(timeout) * time.Second)
		defer timer.Stop()
		expired = timer.C
	}
	for {
		s.mu.Lock()
		if offset > 0 {
			s.confirm(offset) // what comes during the poll is below the offset or not, too
		}
		switch {
		case s.down:
			s.mu.Unlock()
			return nil, errDropped
		case s.pollGeneration != generation:
			s.mu.Unlock()
			return nil, &apiError{code: http.StatusConflict, description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}
		case len(s.pending) > 0 || expired == nil || s.closed:
			batch := s.pending[:min(int(limit), len(s.pending))]
			updates := make([]json.RawMessage, 0, len(batch))
			for _, u := range batch {
				s.delivered[u.id]++
				updates = append(updates, u.body)
			}
			s.mu.Unlock()
			return updates, nil
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-expired:
			expired = nil
		case <-ctx.Done():
			return nil, errDropped // the client is gone; nothing is delivered
		}
	}
}
