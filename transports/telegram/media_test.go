package telegram

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/bus"
	"shelldon/contracts"
	"shelldon/transports/telegram/telegramtest"
)

// hearing makes the rig's transport transcribe and see, with the given
// bounds on voice notes and photos (0: the defaults).
func hearing(voiceMax, photoMax int64) rigOption {
	return func(r *rig) {
		r.configure = func(c *Config) {
			c.Transcription, c.Vision = true, true
			c.VoiceMaxBytes, c.PhotoMaxBytes = voiceMax, photoMax
		}
	}
}

// scribe is a broker on the rig's bus that answers each TRANSCRIBE with
// answer's words, or its error, and keeps what it was asked.
type scribe struct {
	mu    sync.Mutex
	asked []contracts.Transcribe
}

func (s *scribe) requests() []contracts.Transcribe {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]contracts.Transcribe(nil), s.asked...)
}

func startScribe(t *testing.T, r *rig, answer func(contracts.Transcribe) contracts.Transcript) *scribe {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	conn, err := bus.Dial(ctx, r.socket, contracts.Hello{Role: contracts.RoleBroker, Name: "broker"}, 4<<20)
	if err != nil {
		t.Fatalf("join as the broker: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	<-r.joined
	s := &scribe{}
	go func() {
		for {
			env, err := conn.Recv()
			if err != nil {
				return
			}
			var req contracts.Transcribe
			if env.Kind != contracts.KindTranscribe || env.Decode(&req) != nil {
				continue
			}
			s.mu.Lock()
			s.asked = append(s.asked, req)
			s.mu.Unlock()
			got := answer(req)
			got.ID = req.ID
			reply, _ := contracts.NewEnvelope(contracts.KindTranscript, "", got)
			reply.To = env.Sender
			_ = conn.Send(reply)
		}
	}()
	return s
}

func says(text string) func(contracts.Transcribe) contracts.Transcript {
	return func(contracts.Transcribe) contracts.Transcript {
		return contracts.Transcript{OK: true, Text: text, Provider: "whisper"}
	}
}

// nothingReachesCore checks that core got no owner's message.
func nothingReachesCore(t *testing.T, r *rig) {
	t.Helper()
	select {
	case env := <-r.inbox:
		t.Errorf("core got %s %s, want nothing", env.Kind, env.Body)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestVoiceNoteBecomesTheOwnersMessage: the owner's voice note is
// downloaded through getFile, transcribed by the broker, and its words
// reach core as the owner's message, marked spoken, with the update's id
// for core to confirm; the update is kept until then.
func TestVoiceNoteBecomesTheOwnersMessage(t *testing.T) {
	r := newRig(t, hearing(0, 0))
	s := startScribe(t, r, says("remind me to water the plants"))
	audio := []byte("OggS pretend opus frames")
	id := r.api.SendVoice(owner, telegramtest.Voice{Content: audio, Duration: 3})
	var in contracts.Inbound
	r.nextCore(t, contracts.KindInbound, &in)
	if in.Text != "remind me to water the plants" || !in.Spoken || in.Ref != fmt.Sprint(id) || in.Image != nil {
		t.Fatalf("core got %+v, want the transcript, spoken, for update %d", in, id)
	}
	asked := s.requests()
	if len(asked) != 1 || !bytes.Equal(asked[0].Audio, audio) || asked[0].FileName != "voice.ogg" {
		t.Fatalf("the broker was asked %+v, want the voice note's bytes as voice.ogg", asked)
	}
	if got := r.api.Downloads(); len(got) != 1 || !strings.HasPrefix(got[0], "voice/") {
		t.Errorf("downloads = %v, want the voice note's file once", got)
	}
}

// TestMediaWithoutProviders: with no provider that transcribes or sees,
// a voice note and a photo get the polite answer naming the setting, and
// nothing is downloaded.
func TestMediaWithoutProviders(t *testing.T) {
	r := newRig(t)
	r.api.SendVoice(owner, telegramtest.Voice{Content: []byte("x")})
	r.api.WaitMessage(t, owner, hasText("transcription_model"))
	r.api.SendPhoto(owner, "look", telegramtest.Photo{Width: 90, Height: 90, Content: jpegBytes})
	r.api.WaitMessage(t, owner, hasText("vision = true"))
	if got := r.api.Downloads(); len(got) != 0 {
		t.Errorf("downloads = %v, want none", got)
	}
	nothingReachesCore(t, r)
}

// TestMediaFaults: each thing that can go wrong with a voice note or a
// photo is told to the owner in its place, core hears nothing of it, and
// the owner's next message goes on as ever.
func TestMediaFaults(t *testing.T) {
	const voiceMax = 64 << 10
	big := bytes.Repeat([]byte("a"), voiceMax+1)
	tests := []struct {
		name   string
		send   func(r *rig)
		answer func(contracts.Transcribe) contracts.Transcript
		want   []string
		// downloaded is how many files the transport fetched.
		downloaded int
	}{
		{"a voice note larger than the cap", func(r *rig) { r.api.SendVoice(owner, telegramtest.Voice{Content: big}) }, nil,
			[]string{"voice note is 0.1 MiB", "at most 0.1 MiB (telegram.voice_max_bytes)"}, 0},
		{"a server that lies about the size", func(r *rig) { r.api.SendVoice(owner, telegramtest.Voice{Content: big, ClaimedSize: 1000}) }, nil,
			[]string{"more than Telegram said", "telegram.voice_max_bytes"}, 1},
		{"the transcription server answers 500", func(r *rig) { r.api.SendVoice(owner, telegramtest.Voice{Content: []byte("x")}) },
			func(contracts.Transcribe) contracts.Transcript {
				return contracts.Transcript{Error: "all providers failed: whisper: 500 internal server error (retried once)"}
			},
			[]string{"could not make out your voice note", "whisper: 500", "type it"}, 1},
		{"an audio file of a format nobody transcribes", func(r *rig) {
			r.api.SendAudio(owner, telegramtest.Audio{Content: []byte("x"), FileName: "song.wma", MIME: "audio/x-ms-wma"})
		}, nil, []string{"a .wma file", "MP3"}, 0},
		{"a photo that is not an image", func(r *rig) {
			r.api.SendPhoto(owner, "", telegramtest.Photo{Width: 90, Height: 90, Content: []byte("<html>not a photo</html>")})
		}, nil, []string{"not an image"}, 1},
		{"a photo too large in every size", func(r *rig) {
			r.api.SendPhoto(owner, "", telegramtest.Photo{Width: 2560, Height: 1920, Content: jpegBytes})
		}, nil, []string{"1280 pixels a side (telegram.photo_max_side)"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, hearing(voiceMax, 0))
			answer := tt.answer
			if answer == nil {
				answer = says("never asked")
			}
			s := startScribe(t, r, answer)
			tt.send(r)
			got := r.api.WaitMessage(t, owner, hasText(tt.want[0]))
			for _, w := range tt.want[1:] {
				if !strings.Contains(got.Text, w) {
					t.Errorf("the owner read %q, which does not say %q", got.Text, w)
				}
			}
			if n := len(r.api.Downloads()); n != tt.downloaded {
				t.Errorf("downloads = %d, want %d", n, tt.downloaded)
			}
			if tt.answer == nil && len(s.requests()) != 0 {
				t.Errorf("the broker was asked to transcribe %d times, want none", len(s.requests()))
			}
			if in := r.say(t, owner, "still there?"); in.Text != "still there?" {
				t.Errorf("the next message reached core as %q", in.Text)
			}
		})
	}
}

// TestDownloadFails: Telegram's file server in trouble: the owner hears
// what happened and to send it again.
func TestDownloadFails(t *testing.T) {
	r := newRig(t, hearing(0, 0))
	startScribe(t, r, says("never asked"))
	r.api.FailDownloads(http.StatusBadGateway)
	r.api.SendVoice(owner, telegramtest.Voice{Content: []byte("x")})
	got := r.api.WaitMessage(t, owner, hasText("502"))
	if !strings.Contains(got.Text, "send it again") {
		t.Errorf("the owner read %q, which does not say what to do", got.Text)
	}
	if strings.Contains(got.Text, token) {
		t.Errorf("the owner read %q, which shows the bot token", got.Text)
	}
	nothingReachesCore(t, r)
}

// jpegBytes start as a JPEG does, which is what the transport sniffs.
var jpegBytes = []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00 pretend jpeg")

// TestPhotoReachesCore: of the sizes Telegram offers, the largest within
// the bounds reaches core as the image, with the caption in the
// placeholder text that is all the history keeps.
func TestPhotoReachesCore(t *testing.T) {
	r := newRig(t, hearing(0, 0))
	mid := append(append([]byte(nil), jpegBytes...), "800x600"...)
	id := r.api.SendPhoto(owner, "what bird is this?",
		telegramtest.Photo{Width: 90, Height: 68, Content: jpegBytes},
		telegramtest.Photo{Width: 800, Height: 600, Content: mid},
		telegramtest.Photo{Width: 2560, Height: 1920, Content: jpegBytes})
	var in contracts.Inbound
	r.nextCore(t, contracts.KindInbound, &in)
	if in.Text != "[photo: what bird is this?]" || in.Image == nil || !bytes.Equal(in.Image.Data, mid) || in.Image.MIME != "image/jpeg" || in.Ref != fmt.Sprint(id) {
		t.Fatalf("core got %+v, want the 800×600 size as image/jpeg with the caption's placeholder", in)
	}
}

func TestPickPhoto(t *testing.T) {
	small := photoSize{FileID: "s", Width: 90, Height: 60, FileSize: 2 << 10}
	mid := photoSize{FileID: "m", Width: 1280, Height: 960, FileSize: 200 << 10}
	heavy := photoSize{FileID: "h", Width: 1000, Height: 1000, FileSize: 2 << 20}
	big := photoSize{FileID: "b", Width: 2560, Height: 1920, FileSize: 900 << 10}
	unsized := photoSize{FileID: "u", Width: 320, Height: 240}
	tests := []struct {
		sizes []photoSize
		want  string // "" for none
	}{
		{[]photoSize{small, mid, big}, "m"},
		{[]photoSize{big, mid, small}, "m"},
		{[]photoSize{small, heavy}, "s"},
		{[]photoSize{big}, ""},
		{[]photoSize{small, unsized}, "u"},
		{nil, ""},
	}
	for _, tt := range tests {
		got, ok := pickPhoto(tt.sizes, 1<<20, 1280)
		if (tt.want == "") == ok || (ok && got.FileID != tt.want) {
			t.Errorf("pickPhoto(%v) = %q, %v, want %q", tt.sizes, got.FileID, ok, tt.want)
		}
	}
}
