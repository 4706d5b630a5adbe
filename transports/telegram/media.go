package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"

	"shelldon/contracts"
)

// The owner's voice notes and photos. A voice note is downloaded and
// transcribed before core hears of it, while its update waits in the
// inbox: its words become the owner's message, kept by core like any
// other, and a transport stopped meanwhile takes it up again from the
// inbox. A photo is downloaded and handed to core with a placeholder for
// its text. Whatever fails is told to the owner in the message's place,
// and the updates behind it go on in order.

// Replies when no provider can take what the owner sent.
const (
	noTranscriptionReply = "I can't listen to voice notes yet: none of my providers has a transcription_model (set one in a [[provider]] of my configuration, like transcription_model = \"whisper-1\"). Type it for me meanwhile."
	noVisionReply        = "I can't see photos yet: none of my providers is marked vision = true in my configuration. Tell me in words what it shows meanwhile."
)

// Defaults for the zero values of the media bounds of [Config], as the
// config package's.
const (
	defaultVoiceMaxBytes = 2 << 20
	defaultPhotoMaxBytes = 1 << 20
	defaultPhotoMaxSide  = 1280
)

// downloadTimeout bounds getFile and one file's download; transcribeTimeout
// the broker's transcription, all its providers' tries together.
const (
	downloadTimeout   = time.Minute
	transcribeTimeout = 2 * time.Minute
)

// audioFormats are the audio formats OpenAI's /audio/transcriptions
// takes, by the extension it reads them by; Telegram's voice notes are
// OGG Opus, which it names .oga.
var audioFormats = map[string]string{
	"flac": "flac", "m4a": "m4a", "mp3": "mp3", "mp4": "mp4", "mpeg": "mpeg", "mpga": "mpga",
	"oga": "ogg", "ogg": "ogg", "opus": "ogg", "wav": "wav", "webm": "webm",
}

// audioMIMEs name the format of an audio file without a usable name.
var audioMIMEs = map[string]string{
	"audio/ogg": "ogg", "audio/opus": "ogg", "audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/mp4": "m4a",
	"audio/x-m4a": "m4a", "audio/m4a": "m4a", "audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav",
	"audio/webm": "webm", "audio/flac": "flac", "audio/x-flac": "flac",
}

// supportedAudio lists audioFormats' extensions for the owner.
const supportedAudio = "FLAC, M4A, MP3, MP4, OGG (voice notes), WAV or WebM"

// sound is a voice note or audio file of a message.
type sound struct {
	fileID string
	size   int64
	// fileName is what the provider is told, its extension the format.
	fileName string
}

// soundOf is the voice note or audio file of msg, or what is wrong with
// it, for the owner.
func soundOf(msg *message) (sound, error) {
	if v := msg.Voice; v != nil {
		if v.MimeType != "" && audioMIMEs[v.MimeType] == "" {
			return sound{}, fmt.Errorf("your voice note is %s, which I cannot transcribe: I take %s", v.MimeType, supportedAudio)
		}
		return sound{fileID: v.FileID, size: v.FileSize, fileName: "voice.ogg"}, nil
	}
	a := msg.Audio
	format := audioFormats[strings.ToLower(strings.TrimPrefix(path.Ext(a.FileName), "."))]
	if format == "" {
		format = audioMIMEs[a.MimeType]
	}
	if format == "" {
		what := a.MimeType
		if ext := path.Ext(a.FileName); ext != "" {
			what = "a " + ext + " file"
		}
		if what == "" {
			what = "of a kind Telegram did not name"
		}
		return sound{}, fmt.Errorf("your audio file is %s, which I cannot transcribe: send it as %s", what, supportedAudio)
	}
	return sound{fileID: a.FileID, size: a.FileSize, fileName: "audio." + format}, nil
}

// hear transcribes the owner's voice note or audio file of update id,
// and passes its words to core as their message.
func (t *Transport) hear(ctx context.Context, id int64, msg *message) updateFate {
	chat := msg.Chat.ID
	if !t.cfg.Transcription {
		t.reply(ctx, chat, noTranscriptionReply)
		return updateDone
	}
	s, err := soundOf(msg)
	if err == nil {
		var audio []byte
		if audio, err = t.download(ctx, s.fileID, s.size, t.cfg.VoiceMaxBytes, "voice note", "telegram.voice_max_bytes"); err == nil {
			var text string
			if text, err = t.transcribe(ctx, s.fileName, audio); err == nil {
				return t.pass(ctx, id, msg, contracts.Inbound{Chat: strconv.FormatInt(chat, 10), Text: text, Spoken: true})
			}
		}
	}
	if ctx.Err() != nil {
		return updateNotPassed // stopping: the inbox keeps it for the next start
	}
	t.log.Warn("telegram: a voice note was not heard", "update", id, "err", err)
	t.reply(ctx, chat, "🎤 "+sentence(err))
	return updateDone
}

// see passes the owner's photo of update id to core, in the largest of
// Telegram's sizes within the bounds, with its caption.
func (t *Transport) see(ctx context.Context, id int64, msg *message) updateFate {
	chat := msg.Chat.ID
	if !t.cfg.Vision {
		t.reply(ctx, chat, noVisionReply)
		return updateDone
	}
	var err error
	size, ok := pickPhoto(msg.Photo, t.cfg.PhotoMaxBytes, t.cfg.PhotoMaxSide)
	if !ok {
		err = fmt.Errorf("every size Telegram offers of your photo is over the %d pixels a side (telegram.photo_max_side) or the %s (telegram.photo_max_bytes) I take; send a smaller one",
			t.cfg.PhotoMaxSide, inMiB(t.cfg.PhotoMaxBytes))
	} else {
		var data []byte
		if data, err = t.download(ctx, size.FileID, int64(size.FileSize), t.cfg.PhotoMaxBytes, "photo", "telegram.photo_max_bytes"); err == nil {
			if kind := http.DetectContentType(data); strings.HasPrefix(kind, "image/") {
				return t.pass(ctx, id, msg, contracts.Inbound{Chat: strconv.FormatInt(chat, 10), Text: photoPlaceholder(msg.Caption),
					Image: &contracts.Image{MIME: kind, Data: data}})
			} else {
				err = fmt.Errorf("what Telegram gave me for your photo is %s, not an image I can show a model; send it again as a photo", kind)
			}
		}
	}
	if ctx.Err() != nil {
		return updateNotPassed
	}
	t.log.Warn("telegram: a photo was not seen", "update", id, "err", err)
	t.reply(ctx, chat, "📷 "+sentence(err))
	return updateDone
}

// photoPlaceholder is what the owner's photo is in words: the text the
// model reads beside the image, and all the history keeps of it.
func photoPlaceholder(caption string) string {
	if caption = strings.TrimSpace(caption); caption == "" {
		return "[photo]"
	}
	return "[photo: " + caption + "]"
}

// pickPhoto is the largest of Telegram's sizes of a photo whose longer
// side is at most maxSide pixels and whose stated size at most maxBytes
// (a size Telegram does not state is checked as it downloads).
func pickPhoto(sizes []photoSize, maxBytes int64, maxSide int) (photoSize, bool) {
	var best photoSize
	found := false
	for _, s := range sizes {
		if max(s.Width, s.Height) > maxSide || int64(s.FileSize) > maxBytes {
			continue
		}
		if !found || s.Width*s.Height > best.Width*best.Height {
			best, found = s, true
		}
	}
	return best, found
}

// tooLarge is the failure of a file over its bound.
func tooLarge(what, key string, size, limit int64, stated bool) error {
	said := ""
	if !stated {
		said = " (more than Telegram said)"
	}
	return fmt.Errorf("your %s is %s%s, and I take at most %s (%s); send a shorter or smaller one", what, inMiB(size), said, inMiB(limit), key)
}

// inMiB is a size for the owner.
func inMiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// download fetches a file the owner sent, through getFile and
// Telegram's file server, refusing one over limit bytes both by the
// sizes Telegram states and as it reads, in case they are wrong.
func (t *Transport) download(ctx context.Context, fileID string, stated, limit int64, what, key string) ([]byte, error) {
	if stated > limit {
		return nil, tooLarge(what, key, stated, limit, true)
	}
	ctx, cancel := context.WithTimeout(ctx, downloadTimeout)
	defer cancel()
	f, err := t.bot.GetFile(ctx, &bot.GetFileParams{FileID: fileID})
	switch {
	case err != nil:
		return nil, fmt.Errorf("I could not get your %s from Telegram (getFile: %v); send it again in a moment", what, err)
	case f.FileSize > limit:
		return nil, tooLarge(what, key, f.FileSize, limit, true)
	case f.FilePath == "":
		return nil, fmt.Errorf("Telegram gave no path to download your %s from; send it again in a moment", what)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.bot.FileDownloadLink(f), nil)
	if err != nil {
		return nil, fmt.Errorf("I could not download your %s: %w", what, withoutURL(err))
	}
	resp, err := t.files.Do(req)
	if err != nil {
		// The error would name the URL, and with it the token.
		return nil, fmt.Errorf("I could not download your %s from Telegram (%v); send it again in a moment", what, withoutURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("Telegram's file server answered %s for your %s; send it again in a moment", resp.Status, what)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("the download of your %s broke off (%v); send it again in a moment", what, withoutURL(err))
	case int64(len(data)) > limit:
		return nil, tooLarge(what, key, int64(len(data)), limit, false)
	}
	return data, nil
}

// withoutURL is err without the URL an *url.Error names.
func withoutURL(err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err
	}
	return err
}

// sentence is err as a sentence for the owner.
func sentence(err error) string {
	s := err.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// transcripts are the transcriptions asked of the broker and not yet
// answered, by request id.
type transcripts struct {
	mu      sync.Mutex
	next    int64
	waiting map[string]chan contracts.Transcript
}

func (w *transcripts) open() (string, chan contracts.Transcript) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	id := strconv.FormatInt(w.next, 10)
	ch := make(chan contracts.Transcript, 1)
	if w.waiting == nil {
		w.waiting = map[string]chan contracts.Transcript{}
	}
	w.waiting[id] = ch
	return id, ch
}

func (w *transcripts) close(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.waiting, id)
}

// deliver hands the broker's answer to its request, if still waited for.
func (w *transcripts) deliver(t contracts.Transcript) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.waiting[t.ID]
	if ok {
		ch <- t
		delete(w.waiting, t.ID)
	}
	return ok
}

// transcribe asks the broker, over the bus, for the words of audio.
func (t *Transport) transcribe(ctx context.Context, fileName string, audio []byte) (string, error) {
	id, answer := t.transcripts.open()
	defer t.transcripts.close(id)
	deadline := t.clock.Now().Add(transcribeTimeout)
	if err := t.toCore(contracts.KindTranscribe, contracts.Transcribe{ID: id, FileName: fileName, Audio: audio, Deadline: deadline}); err != nil {
		return "", fmt.Errorf("I could not ask for your voice note to be transcribed (%v); send it again in a moment", err)
	}
	timer := time.NewTimer(transcribeTimeout + sendTimeout)
	defer timer.Stop()
	select {
	case got := <-answer:
		if !got.OK {
			return "", fmt.Errorf("I could not make out your voice note: %s; send it again in a moment, or type it", got.Error)
		}
		return got.Text, nil
	case <-timer.C:
		return "", fmt.Errorf("no transcript of your voice note came within %v (is shelldon-broker running?); send it again, or type it", transcribeTimeout)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
