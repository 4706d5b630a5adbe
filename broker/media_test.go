package broker_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"shelldon/broker"
	"shelldon/bus"
	"shelldon/contracts"
	"shelldon/daemon/hub"
	"shelldon/daemon/hub/hubtest"
	"shelldon/demomodel"
)

// mediaProvider starts a scripted model and a provider pointing at it,
// configured as cfg says (its URL and model filled in).
func mediaProvider(t *testing.T, cfg broker.OpenAIConfig) (*demomodel.Server, *broker.OpenAI, *bodyRecorder) {
	t.Helper()
	srv := demomodel.New()
	rec := &bodyRecorder{next: srv}
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	cfg.BaseURL, cfg.Model, cfg.APIKey = ts.URL+"/v1", demomodel.ModelName, "test-key"
	return srv, broker.NewOpenAI(cfg), rec
}

// TestVoiceNoteIsTranscribed: the owner's voice note reaches the
// transcription endpoint as go-openai sends it (multipart: the file under
// its name, the configured model), and its words come back.
func TestVoiceNoteIsTranscribed(t *testing.T) {
	srv, p, _ := mediaProvider(t, broker.OpenAIConfig{Name: "whisper", TranscriptionModel: "whisper-1"})
	srv.EnqueueTranscripts(demomodel.TranscriptStep{Text: "  buy milk on the way home \n"})
	audio := []byte("OggS\x00\x02 pretend opus")
	got := chainOf(p).Transcribe(context.Background(), "voice.ogg", audio)
	if !got.OK || got.Text != "buy milk on the way home" || got.Provider != "whisper" {
		t.Fatalf("Transcribe = %+v, want the words, trimmed, from whisper", got)
	}
	seen := srv.Transcriptions()
	if len(seen) != 1 || seen[0].Model != "whisper-1" || seen[0].FileName != "voice.ogg" || string(seen[0].Audio) != string(audio) {
		t.Fatalf("the endpoint got %+v, want whisper-1 and voice.ogg with the audio", seen)
	}
}

// TestTranscriptionFailures: a transcription server that answers 500 is
// tried once more and then named; an empty transcript is a failure; a
// chain where no provider has a transcription model says which setting
// is missing, without calling anyone.
func TestTranscriptionFailures(t *testing.T) {
	srv, p, _ := mediaProvider(t, broker.OpenAIConfig{Name: "whisper", TranscriptionModel: "whisper-1"})
	srv.EnqueueTranscripts(demomodel.TranscriptStep{Status: 500, Error: "the GPU fell over"}, demomodel.TranscriptStep{Status: 500, Error: "the GPU fell over"})
	got := chainOf(p).Transcribe(context.Background(), "voice.ogg", []byte("x"))
	if got.OK || !strings.Contains(got.Error, "whisper: 500 the GPU fell over (retried once)") || len(srv.Transcriptions()) != 2 {
		t.Errorf("Transcribe against a 500 = %+v after %d calls, want the reason after one retry", got, len(srv.Transcriptions()))
	}

	srv.EnqueueTranscripts(demomodel.TranscriptStep{Text: "   "})
	if got := chainOf(p).Transcribe(context.Background(), "voice.ogg", []byte("x")); got.OK || !strings.Contains(got.Error, "empty") {
		t.Errorf("Transcribe of silence = %+v, want a failure saying the transcript is empty", got)
	}

	textOnly, q, _ := mediaProvider(t, broker.OpenAIConfig{Name: "chat"})
	got = chainOf(q).Transcribe(context.Background(), "voice.ogg", []byte("x"))
	if got.OK || !strings.Contains(got.Error, "transcription_model") || len(textOnly.Transcriptions()) != 0 {
		t.Errorf("Transcribe with no transcription model = %+v, want an error naming transcription_model and no call", got)
	}
}

// TestPhotoGoesToTheVisionProvider: a conversation with a photo skips
// the first provider, which is not marked vision, and reaches the second
// as an image content part (a base64 data: URL) beside the caption.
func TestPhotoGoesToTheVisionProvider(t *testing.T) {
	blind, first, _ := mediaProvider(t, broker.OpenAIConfig{Name: "blind"})
	seeing, second, rec := mediaProvider(t, broker.OpenAIConfig{Name: "eyes", Vision: true})
	seeing.Enqueue(demomodel.Step{Text: "a cat"})
	photo := contracts.Image{MIME: "image/jpeg", Data: []byte("\xff\xd8\xff pretend jpeg")}
	messages := []contracts.Message{greeting[0], {Role: contracts.ChatUser, Content: "[photo: what is this?]", Images: []contracts.Image{photo}}}
	got := chainOf(first, second).Complete(context.Background(), messages, nil)
	if !got.OK || got.Provider != "eyes" || got.Text != "a cat" {
		t.Fatalf("Complete with a photo = %+v, want the vision provider's answer", got)
	}
	if blind.Hits() != 0 {
		t.Errorf("the provider without vision was asked %d times, want never", blind.Hits())
	}
	reqs := seeing.Requests()
	last := reqs[len(reqs)-1].Messages[1]
	if last.Content != "[photo: what is this?]" || len(last.Images) != 1 || string(last.Images[0].Data) != string(photo.Data) || last.Images[0].MIME != "image/jpeg" {
		t.Errorf("the vision model got %+v, want the caption and the photo", last)
	}
	parts := rec.last(t)["messages"].([]any)[1].(map[string]any)["content"].([]any)
	url := parts[1].(map[string]any)["image_url"].(map[string]any)["url"].(string)
	if !strings.HasPrefix(url, "data:image/jpeg;base64,") {
		t.Errorf("the image part's url = %.40q, want a data: URL", url)
	}
	// Text alone still goes to the first provider.
	blind.Enqueue(demomodel.Step{Text: "hi"})
	if got := chainOf(first, second).Complete(context.Background(), greeting, nil); got.Provider != "blind" {
		t.Errorf("Complete without a photo went to %q, want the first provider", got.Provider)
	}
}

// TestPhotoWithoutVisionProvider: no provider marked vision = true: the
// photo is refused with the setting named, and nobody is called.
func TestPhotoWithoutVisionProvider(t *testing.T) {
	blind, p, _ := mediaProvider(t, broker.OpenAIConfig{Name: "blind"})
	messages := []contracts.Message{{Role: contracts.ChatUser, Content: "[photo]", Images: []contracts.Image{{MIME: "image/jpeg", Data: []byte("x")}}}}
	got := chainOf(p).Complete(context.Background(), messages, nil)
	if got.OK || !strings.Contains(got.Error, "vision = true") || blind.Hits() != 0 {
		t.Errorf("Complete with a photo and no vision = %+v after %d calls, want an error naming vision = true and no call", got, blind.Hits())
	}
}

// TestTranscribeOverTheBus: a transport's TRANSCRIBE reaches the broker
// through the hub, and the TRANSCRIPT comes back to that transport only,
// with the request's id.
func TestTranscribeOverTheBus(t *testing.T) {
	srv, p, _ := mediaProvider(t, broker.OpenAIConfig{Name: "whisper", TranscriptionModel: "whisper-1"})
	srv.EnqueueTranscripts(demomodel.TranscriptStep{Text: "feed the cat"})
	socket := hubtest.SocketPath(t)
	hubtest.Serve(t, socket, hub.Config{HoldFor: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go broker.Serve(ctx, socket, 1<<20, chainOf(p), slog.New(slog.DiscardHandler))

	join := func(name string) *bus.Conn {
		conn, err := bus.Dial(ctx, socket, contracts.Hello{Role: contracts.RoleTransport, Name: name}, 1<<20)
		if err != nil {
			t.Fatalf("join as transport %s: %v", name, err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	asker, other := join("telegram"), join("cli")
	env, err := contracts.NewEnvelope(contracts.KindTranscribe, "", contracts.Transcribe{ID: "7", FileName: "voice.ogg", Audio: []byte("x"), Deadline: time.Now().Add(guard)})
	if err != nil {
		t.Fatal(err)
	}
	if err := asker.Send(env); err != nil {
		t.Fatal(err)
	}
	answer, err := asker.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var got contracts.Transcript
	if err := answer.Decode(&got); err != nil || answer.Kind != contracts.KindTranscript || got.ID != "7" || got.Text != "feed the cat" {
		t.Fatalf("the transport got %s %+v (%v), want the transcript of request 7", answer.Kind, got, err)
	}
	done := make(chan error, 1)
	go func() { _, err := other.Recv(); done <- err }()
	select {
	case err := <-done:
		t.Errorf("another transport heard something (%v); the transcript is the asker's alone", err)
	case <-time.After(200 * time.Millisecond):
	}
}
