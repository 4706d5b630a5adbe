// Package media keeps what the owner's messages carry beyond their text,
// from the moment core admits a message until its turn has answered it.
// A voice note arrives as its transcript, an ordinary message but for the
// echo its reply starts with. A photo arrives with a placeholder for its
// text, which is what the database and the history keep; the image
// itself is kept as a file of the photos directory, named by the
// message's id, for as long as the message is unanswered, so that a turn
// taken up after a restart still sees it.
//
// A Keeper belongs to core's loop: its methods are not safe for
// concurrent use.
package media

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"shelldon/atomicfile"
	"shelldon/contracts"
)

// MaxPhotoFile bounds a kept photo read back for a turn: the transport's
// bound (telegram.photo_max_bytes) is 20 MiB at most.
const MaxPhotoFile = 20 << 20

// SpokenEcho starts the reply to a voice note: the owner reads what the
// pet understood.
const SpokenEcho = "🎤 you said: "

// Keeper holds the transcripts of unanswered voice notes and the files of
// unanswered photos.
type Keeper struct {
	dir   string
	heard map[int64]string
	// failed counts a write that failed (core's failed-writes tally) and
	// returns err.
	failed func(what string, err error) error
	log    *slog.Logger
}

// New returns a Keeper of photos in dir (the state directory's photos
// directory, made when the first photo comes). failed is told of every
// write that fails.
func New(dir string, failed func(what string, err error) error, log *slog.Logger) *Keeper {
	return &Keeper{dir: dir, heard: map[int64]string{}, failed: failed, log: log}
}

// Keep remembers what the kept message id of in needs beyond its text:
// the transcript's echo, the photo's file.
func (k *Keeper) Keep(id int64, in contracts.Inbound) {
	if in.Spoken {
		k.heard[id] = in.Text
	}
	if in.Image == nil {
		return
	}
	err := os.MkdirAll(k.dir, 0o700)
	if err == nil {
		err = atomicfile.WriteFile(k.path(id), in.Image.Data, 0o600)
	}
	if err := k.failed("keep the owner's photo", err); err != nil {
		k.log.Error("could not keep the owner's photo; the turn reads only its placeholder", "message", id, "err", err)
	}
}

func (k *Keeper) path(id int64) string {
	return filepath.Join(k.dir, strconv.FormatInt(id, 10))
}

// Photos is the photo a turn answering messages shows the model: the last
// of their photos. A turn looks at one photo, so that the frames that
// carry it to the worker and the broker stay within the bus's bound.
func (k *Keeper) Photos(messages []int64) []contracts.Image {
	for _, id := range slices.Backward(messages) {
		data, err := readBounded(k.path(id), MaxPhotoFile)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			k.log.Error("reading the owner's photo back failed; the turn reads only its placeholder", "message", id, "err", err)
			return nil
		}
		return []contracts.Image{{MIME: http.DetectContentType(data), Data: data}}
	}
	return nil
}

// readBounded reads a file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d a photo may be", path, info.Size(), limit)
	}
	return os.ReadFile(path)
}

// Echo starts reply, the answer to messages, with what the owner said in
// those of them that were voice notes.
func (k *Keeper) Echo(messages []int64, reply string) string {
	var said []string
	for _, id := range messages {
		if text, ok := k.heard[id]; ok {
			said = append(said, SpokenEcho+text)
		}
	}
	if len(said) == 0 {
		return reply
	}
	return strings.Join(said, "\n") + "\n\n" + reply
}

// Forget lets go of what the answered messages needed beyond their text.
func (k *Keeper) Forget(messages []int64) {
	for _, id := range messages {
		delete(k.heard, id)
		if err := os.Remove(k.path(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			k.log.Warn("removing an answered message's photo", "message", id, "err", err)
		}
	}
}

// Prune removes the photos of every message but the unanswered ones,
// left by a core that stopped between an answer and the removal.
func (k *Keeper) Prune(unanswered []int64) {
	entries, err := os.ReadDir(k.dir)
	if err != nil {
		return // none kept
	}
	for _, e := range entries {
		id, err := strconv.ParseInt(e.Name(), 10, 64)
		if err == nil && slices.Contains(unanswered, id) {
			continue
		}
		if err := os.Remove(filepath.Join(k.dir, e.Name())); err != nil {
			k.log.Warn("removing a photo of an answered message", "file", e.Name(), "err", err)
		}
	}
}
