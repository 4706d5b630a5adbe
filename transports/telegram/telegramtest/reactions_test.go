package telegramtest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

func eyes(emoji string) []models.ReactionType {
	return []models.ReactionType{{Type: models.ReactionTypeTypeEmoji, ReactionTypeEmoji: &models.ReactionTypeEmoji{Emoji: emoji}}}
}

func TestSetMessageReaction(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi") // message 1
	b := newBot(t, s)
	ctx := context.Background()
	two := append(eyes("👀"), eyes("👍")...)
	tests := []struct {
		name     string
		message  int
		reaction []models.ReactionType
		want     []string
		wantErr  string
	}{
		{"eyes on the owner's message", 1, eyes("👀"), []string{"👀"}, ""},
		{"an emoji not on Telegram's list", 1, eyes("🐢"), []string{"👀"}, "Bad Request: REACTION_INVALID"},
		{"two at once", 1, two, []string{"👀"}, "Bad Request: REACTIONS_TOO_MANY"},
		{"a message that is not there", 99, eyes("👀"), nil, "Bad Request: message to react not found"},
		{"none takes it away", 1, nil, nil, ""},
	}
	for _, tt := range tests {
		ok, err := b.SetMessageReaction(ctx, &bot.SetMessageReactionParams{ChatID: owner, MessageID: tt.message, Reaction: tt.reaction})
		switch {
		case tt.wantErr == "" && (err != nil || !ok):
			t.Errorf("%s: SetMessageReaction = %v, %v; want true", tt.name, ok, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, bot.ErrorBadRequest)):
			t.Errorf("%s: SetMessageReaction error = %v, want a bad request saying %q", tt.name, err, tt.wantErr)
		}
		if got := s.Reactions(owner, int64(tt.message)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Reactions = %q, want %q", tt.name, got, tt.want)
		}
	}
	s.SetReactionsAllowed(false)
	if _, err := b.SetMessageReaction(ctx, &bot.SetMessageReactionParams{ChatID: owner, MessageID: 1, Reaction: eyes("👀")}); err == nil || !strings.Contains(err.Error(), "REACTION_INVALID") {
		t.Errorf("SetMessageReaction with reactions refused: error = %v, want REACTION_INVALID", err)
	}
}

func TestDeleteMessage(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi")
	b := newBot(t, s)
	ctx := context.Background()
	msg, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: owner, Text: "reading notes.md…"})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := b.DeleteMessage(ctx, &bot.DeleteMessageParams{ChatID: owner, MessageID: msg.ID}); err != nil || !ok {
		t.Fatalf("DeleteMessage = %v, %v; want true", ok, err)
	}
	if got := s.Messages(owner); len(got) != 0 {
		t.Errorf("Messages after the delete = %+v, want none", got)
	}
	if got := s.Deleted(owner); !slices.Equal(got, []int64{int64(msg.ID)}) {
		t.Errorf("Deleted = %v, want [%d]", got, msg.ID)
	}
	_, err = b.DeleteMessage(ctx, &bot.DeleteMessageParams{ChatID: owner, MessageID: msg.ID})
	if !errors.Is(err, bot.ErrorBadRequest) || !strings.Contains(err.Error(), "message to delete not found") {
		t.Errorf("DeleteMessage again: error = %v, want a bad request, message to delete not found", err)
	}
	_, err = b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: owner, MessageID: msg.ID, Text: "x"})
	if err == nil || !strings.Contains(err.Error(), "message to edit not found") {
		t.Errorf("EditMessageText of a deleted message: error = %v, want message to edit not found", err)
	}
}
