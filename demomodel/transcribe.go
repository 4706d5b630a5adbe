package demomodel

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// maxAudioBytes bounds an upload to /audio/transcriptions: OpenAI's own
// limit is 25 MB.
const maxAudioBytes = 25 << 20

// DemoTranscript is what the demo model hears in audio that is not words
// written out (see [Server.EnqueueTranscripts]): it cannot really listen.
const DemoTranscript = "hello from a voice note"

// maxHeardText is the most of an upload's bytes the demo model takes for
// the words spoken, when they are text.
const maxHeardText = 1000

// Transcription is one /audio/transcriptions request as the server got
// it: the multipart form go-openai's CreateTranscription sends.
type Transcription struct {
	Model    string
	FileName string
	Audio    []byte
	// Format is the response_format field; empty means json.
	Format   string
	Received time.Time
}

// TranscriptStep scripts the answer to one transcription: Text, or a
// failure with Status (and Error as the message).
type TranscriptStep struct {
	Text   string
	Status int
	Error  string
}

// EnqueueTranscripts appends answers for the next transcriptions. Once
// they are used up, the server hears an upload that is valid UTF-8 text
// (what tests send as a voice note) as those words, and anything else as
// [DemoTranscript].
func (s *Server) EnqueueTranscripts(steps ...TranscriptStep) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transcriptQueue = append(s.transcriptQueue, steps...)
}

// Transcriptions returns the latest [RequestsKept] transcription
// requests, oldest first.
func (s *Server) Transcriptions() []Transcription {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.transcriptions)
	for i := range out {
		out[i].Audio = slices.Clone(out[i].Audio)
	}
	return out
}

// transcribe answers POST /audio/transcriptions: a multipart form with
// the file and the model, answered as {"text": …} or, for
// response_format text, the bare text.
func (s *Server) transcribe(w http.ResponseWriter, r *http.Request) {
	if media, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || media != "multipart/form-data" {
		writeError(w, http.StatusBadRequest, "a transcription is multipart/form-data with a file and a model")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxAudioBytes+64<<10)
	if err := r.ParseMultipartForm(maxAudioBytes); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the upload is over %d bytes", maxAudioBytes))
			return
		}
		writeError(w, http.StatusBadRequest, "unreadable multipart form: "+err.Error())
		return
	}
	defer r.MultipartForm.RemoveAll()
	model := r.FormValue("model")
	file, header, err := r.FormFile("file")
	switch {
	case model == "":
		writeError(w, http.StatusBadRequest, "the form has no model field")
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, "the form has no file: "+err.Error())
		return
	}
	defer file.Close()
	audio, err := io.ReadAll(file)
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the file: "+err.Error())
		return
	}
	format := r.FormValue("response_format")
	got := Transcription{Model: model, FileName: header.Filename, Audio: audio, Format: format, Received: time.Now()}

	s.mu.Lock()
	if len(s.transcriptions) == RequestsKept {
		copy(s.transcriptions, s.transcriptions[1:])
		s.transcriptions = s.transcriptions[:RequestsKept-1]
	}
	s.transcriptions = append(s.transcriptions, got)
	step := TranscriptStep{Text: heard(audio)}
	if len(s.transcriptQueue) > 0 {
		step = s.transcriptQueue[0]
		s.transcriptQueue = s.transcriptQueue[1:]
	}
	s.mu.Unlock()
	if s.Logf != nil {
		s.Logf("transcription of %q (%d bytes) arrived", got.FileName, len(audio))
	}

	switch {
	case step.Status != 0 && step.Status != http.StatusOK:
		writeError(w, step.Status, step.Error)
	case format == "text":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, step.Text+"\n")
	case format == "" || format == "json" || format == "verbose_json":
		writeJSON(w, http.StatusOK, struct {
			Text string `json:"text"`
		}{step.Text})
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("response_format %q is not scripted: the demo model answers json, verbose_json or text", format))
	}
}

// heard is what the demo model makes of audio: written-out words as they
// are, anything else as DemoTranscript.
func heard(audio []byte) string {
	text := string(audio)
	if len(audio) == 0 || len(audio) > maxHeardText || !utf8.ValidString(text) ||
		strings.IndexFunc(text, func(r rune) bool { return unicode.IsControl(r) && r != '\n' }) >= 0 {
		return DemoTranscript
	}
	return strings.TrimSpace(text)
}
