package main

import (
	"bytes"
	"image"
	"image/jpeg"
	"os"
	"strings"
	"testing"

	"shelldon/config"
	"shelldon/daemon/statedir"
	"shelldon/demomodel"
	"shelldon/transports/telegram/telegramtest"
)

// withMedia marks the pet's provider as transcribing and seeing.
func withMedia(c *config.Config) {
	c.Providers[0].Vision, c.Providers[0].TranscriptionModel = true, "whisper-1"
}

// testJPEG is a real JPEG of w×h pixels.
func testJPEG(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestVoiceNoteAndPhotoThroughTheWholePet: the owner sends a voice note,
// then a photo, on Telegram. The broker has the voice note transcribed
// (the real go-openai client, multipart, against the scripted model's
// /audio/transcriptions), the reply starts with what was heard; the photo
// reaches the model as an image content part, and the history keeps
// only its placeholder, so the next turn sees no image.
func TestVoiceNoteAndPhotoThroughTheWholePet(t *testing.T) {
	t.Parallel()
	model := demomodel.New()
	api := telegramtest.New(t, botToken)
	p := newPet(t, model, withTelegram(api), withMedia)

	api.SendVoice(ownerID, telegramtest.Voice{Content: []byte("hello pet, are you awake"), Duration: 2})
	reply := api.WaitMessage(t, ownerID, textHas("🎤 you said: hello pet, are you awake"))
	if !strings.Contains(reply.Text, "Hello to you too") {
		t.Errorf("the reply %q does not answer the words heard", reply.Text)
	}
	if got := model.Transcriptions(); len(got) != 1 || got[0].Model != "whisper-1" || got[0].FileName != "voice.ogg" {
		t.Errorf("the transcription endpoint got %+v, want one voice.ogg for whisper-1", got)
	}

	photo := testJPEG(t, 64, 48)
	api.SendPhoto(ownerID, "what is this?", telegramtest.Photo{Width: 64, Height: 48, Content: photo})
	api.WaitMessage(t, ownerID, textHas("I see your photo: a 64×48 jpeg"))
	reqs := p.waitRequests(2)
	seen := reqs[len(reqs)-1].Messages
	last := seen[len(seen)-1]
	if last.Content != "[photo: what is this?]" || len(last.Images) != 1 || !bytes.Equal(last.Images[0].Data, photo) {
		t.Fatalf("the model got %q with %d images, want the placeholder and the photo", last.Content, len(last.Images))
	}

	api.SendText(ownerID, "thanks")
	api.WaitMessage(t, ownerID, textHas("“thanks”"))
	reqs = p.waitRequests(3)
	history := reqs[len(reqs)-1].Messages
	placeholder := false
	for _, m := range history {
		if len(m.Images) > 0 {
			t.Errorf("the next turn sent an image again, in %q", m.Content)
		}
		placeholder = placeholder || m.Content == "[photo: what is this?]"
	}
	if !placeholder {
		t.Errorf("the next turn's history has no placeholder of the photo: %+v", history)
	}
	if left, _ := os.ReadDir(statedir.Layout{Root: p.cfg.StateDir}.Photos()); len(left) != 0 {
		t.Errorf("%d photos are still kept after their answer", len(left))
	}
}

// TestVoiceNoteOutlivesARestart: core stops while it thinks about a
// transcribed voice note; the next core still answers it, and the model
// hears the words again, not the audio.
func TestVoiceNoteOutlivesARestart(t *testing.T) {
	t.Parallel()
	model := demomodel.New(demomodel.Step{Hang: true})
	api := telegramtest.New(t, botToken)
	p := newPet(t, model, withTelegram(api), withMedia, func(c *config.Config) { c.Timeouts.StopGrace.Duration = 0 })
	api.SendVoice(ownerID, telegramtest.Voice{Content: []byte("hello again")})
	p.waitRequests(1)
	p.stopCore()
	p.startCore()
	api.WaitMessage(t, ownerID, textHas("restarted before I could answer “hello again”"))
	api.WaitMessage(t, ownerID, textHas("You said: “hello again”"))
	if got := model.Transcriptions(); len(got) != 1 {
		t.Errorf("the voice note was transcribed %d times, want once: core kept its words", len(got))
	}
}

// TestSpokenAndCaptionedSlashesAreWordsNotCommands: the owner keeps a
// rule, then sends a voice note whose transcript reads "/rules revoke 1"
// and a photo captioned so. Both are the owner's words to the pet — a
// transcript can be a radio in the room, a caption is about the photo —
// so each is a turn for the model, and the rule stays.
func TestSpokenAndCaptionedSlashesAreWordsNotCommands(t *testing.T) {
	t.Parallel()
	model := demomodel.New(
		writeCall("w1", "todo.txt", "milk"), demomodel.Step{Text: "Saved your list."},
		demomodel.Step{Text: "You said a command out loud; I only take those typed."},
		demomodel.Step{Text: "A photo with a caption."},
	)
	api := telegramtest.New(t, botToken)
	newPet(t, model, withTelegram(api), withMedia)

	api.SendText(ownerID, "put milk on my list")
	tap(api, api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool { return len(m.Keyboard) > 0 }), "Always")
	api.WaitMessage(t, ownerID, textHas("Rule 1 kept"))
	api.WaitMessage(t, ownerID, textHas("Saved your list."))

	api.SendVoice(ownerID, telegramtest.Voice{Content: []byte("/rules revoke 1")})
	heard := api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool {
		return strings.Contains(m.Text, "Rule 1 revoked") || strings.Contains(m.Text, "🎤 you said: /rules revoke 1")
	})
	if !strings.Contains(heard.Text, "I only take those typed") {
		t.Errorf("the voice note was answered %q, want the model's answer to the words heard", heard.Text)
	}
	api.SendPhoto(ownerID, "/rules revoke 1", telegramtest.Photo{Width: 8, Height: 8, Content: testJPEG(t, 8, 8)})
	captioned := api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool {
		return m.ID > heard.ID && (strings.Contains(m.Text, "Rule 1 revoked") || strings.Contains(m.Text, "A photo with a caption."))
	})
	if !strings.Contains(captioned.Text, "A photo with a caption.") {
		t.Errorf("the captioned photo was answered %q, want the model's answer", captioned.Text)
	}
	api.SendText(ownerID, "/rules")
	rules := api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool {
		return strings.Contains(m.Text, "What runs without asking") || strings.Contains(m.Text, "No rules")
	})
	if !strings.Contains(rules.Text, "1. write_file to `todo.txt`") {
		t.Errorf("/rules = %q, want rule 1 still there", rules.Text)
	}
}
