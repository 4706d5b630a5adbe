package telegramtest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Voice is a voice note the owner sends (SendVoice): OGG Opus on
// Telegram, though the fake takes any bytes.
type Voice struct {
	Content  []byte
	MIME     string // "" means audio/ogg
	Duration int    // seconds
	// ClaimedSize, when not 0, is the file_size the update and getFile
	// state instead of the content's: a server that lies about the size.
	ClaimedSize int64
}

// Audio is an audio file the owner sends (SendAudio).
type Audio struct {
	Content     []byte
	FileName    string
	MIME        string
	ClaimedSize int64
}

// Photo is one of the sizes Telegram offers of a photo (SendPhoto).
type Photo struct {
	Width, Height int
	Content       []byte
	ClaimedSize   int64
}

// storedFile is a file the bot may download.
type storedFile struct {
	id, uniqueID, path string
	content            []byte
	claimed            int64
}

func (f *storedFile) size() int64 {
	if f.claimed != 0 {
		return f.claimed
	}
	return int64(len(f.content))
}

// store keeps content for the bot to download through getFile, under a
// path in folder with extension ext. Callers hold s.mu.
func (s *Server) store(content []byte, claimed int64, folder, ext string) *storedFile {
	s.nextFile++
	n := s.nextFile
	f := &storedFile{
		id: fmt.Sprintf("AwACAgIAAxkBAAIB%04dZ", n), uniqueID: fmt.Sprintf("AgAD%04d", n),
		path: fmt.Sprintf("%s/file_%d%s", folder, n, ext), content: slices.Clone(content), claimed: claimed,
	}
	if s.files == nil {
		s.files = map[string]*storedFile{}
	}
	s.files[f.id] = f
	return f
}

// SendVoice queues a voice note from user from in their private chat,
// its file ready for getFile, and returns the update id.
func (s *Server) SendVoice(from int64, v Voice) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v.MIME == "" {
		v.MIME = "audio/ogg"
	}
	f := s.store(v.Content, v.ClaimedSize, "voice", ".oga")
	c := s.chatWith(from)
	w := s.wire(c, c.add(&message{voice: &wireVoice{FileID: f.id, FileUniqueID: f.uniqueID, Duration: v.Duration, MimeType: v.MIME, FileSize: f.size()}}))
	return s.queue(wireUpdate{Message: &w})
}

// SendAudio queues an audio file from user from, and returns the update id.
func (s *Server) SendAudio(from int64, a Audio) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ext := ""
	if i := strings.LastIndexByte(a.FileName, '.'); i >= 0 {
		ext = a.FileName[i:]
	}
	f := s.store(a.Content, a.ClaimedSize, "music", ext)
	c := s.chatWith(from)
	w := s.wire(c, c.add(&message{audio: &wireAudio{FileID: f.id, FileUniqueID: f.uniqueID, FileName: a.FileName, MimeType: a.MIME, FileSize: f.size()}}))
	return s.queue(wireUpdate{Message: &w})
}

// SendPhoto queues a photo from user from, in the sizes given (Telegram
// lists them smallest first), with caption, and returns the update id.
func (s *Server) SendPhoto(from int64, caption string, sizes ...Photo) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := &message{text: caption}
	for _, p := range sizes {
		f := s.store(p.Content, p.ClaimedSize, "photos", ".jpg")
		m.photo = append(m.photo, wirePhotoSize{FileID: f.id, FileUniqueID: f.uniqueID, Width: p.Width, Height: p.Height, FileSize: f.size()})
	}
	c := s.chatWith(from)
	w := s.wire(c, c.add(m))
	return s.queue(wireUpdate{Message: &w})
}

// FailDownloads makes every file download answer status from now on (0
// heals it), as a file server in trouble does.
func (s *Server) FailDownloads(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.downloadFault = status
}

// Downloads returns the file paths the bot downloaded, in order.
func (s *Server) Downloads() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.downloads)
}

func (s *Server) getFile(_ context.Context, req request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := req.params["file_id"]
	f, ok := s.files[id]
	if !ok {
		return nil, badRequest("invalid file_id")
	}
	return wireFile{FileID: f.id, FileUniqueID: f.uniqueID, FileSize: f.size(), FilePath: f.path}, nil
}

// serveFile answers a download, GET /file/bot<token>/<file_path>, with
// the file's bytes, as Telegram's file server does.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	token, path, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/file/bot"), "/")
	s.mu.Lock()
	fault := s.downloadFault
	var found *storedFile
	for _, f := range s.files {
		if f.path == path {
			found = f
		}
	}
	if token == s.token && found != nil && fault == 0 {
		s.downloads = append(s.downloads, path)
	}
	s.mu.Unlock()
	switch {
	case r.Method != http.MethodGet:
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	case token != s.token:
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	case fault != 0:
		http.Error(w, http.StatusText(fault), fault)
	case found == nil:
		http.Error(w, "Not Found", http.StatusNotFound)
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(found.content)))
		_, _ = w.Write(found.content)
	}
}
