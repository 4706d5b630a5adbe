package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"shelldon/contracts"
	"shelldon/daemon/state"
	"shelldon/daemon/state/atomicfile"
	"shelldon/daemon/turns"
)

// The owner's voice notes and photos, as core keeps them. A voice note
// arrives as its transcript, an ordinary message but for the echo its
// reply starts with. A photo arrives with a placeholder for its text,
// which is what the database and the history keep; the image itself is
// kept as a file of the photos directory, named by the message's id, for
// as long as the message is unanswered, so that a turn taken up after a
// restart still sees it.

// maxPhotoFile bounds a kept photo read back for a turn: the transport's
// bound (telegram.photo_max_bytes) is 20 MiB at most.
const maxPhotoFile = 20 << 20

// spokenEcho starts the reply to a voice note: the owner reads what the
// pet understood.
const spokenEcho = "🎤 you said: "

// keepMedia remembers what a kept message of in needs beyond its text:
// the transcript's echo, the photo's file.
func (c *Core) keepMedia(id int64, in contracts.Inbound) {
	if in.Spoken {
		c.heard[id] = in.Text
	}
	if in.Image == nil {
		return
	}
	err := os.MkdirAll(c.layout.Photos(), 0o700)
	if err == nil {
		err = atomicfile.WriteFile(c.photoPath(id), in.Image.Data, 0o600)
	}
	if err := c.writes.note("keep the owner's photo", err); err != nil {
		c.log.Error("could not keep the owner's photo; the turn reads only its placeholder", "message", id, "err", err)
	}
}

func (c *Core) photoPath(id int64) string {
	return filepath.Join(c.layout.Photos(), strconv.FormatInt(id, 10))
}

// photosOf is the photo a turn shows the model: the last of its
// messages' photos. A turn looks at one photo, so that the frames that
// carry it to the worker and the broker stay within the bus's bound.
func (c *Core) photosOf(messages []int64) []contracts.Image {
	for _, id := range slices.Backward(messages) {
		data, err := readBounded(c.photoPath(id), maxPhotoFile)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			c.log.Error("reading the owner's photo back failed; the turn reads only its placeholder", "message", id, "err", err)
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

// echoHeard starts the reply of turn t with what the owner said in the
// voice notes it answers.
func (c *Core) echoHeard(t *turns.Turn, reply string) string {
	var said []string
	for _, id := range t.Admission.Messages {
		if text, ok := c.heard[id]; ok {
			said = append(said, spokenEcho+text)
		}
	}
	if len(said) == 0 {
		return reply
	}
	return strings.Join(said, "\n") + "\n\n" + reply
}

// forgetMedia lets go of what the answered messages needed beyond their
// text.
func (c *Core) forgetMedia(messages []int64) {
	for _, id := range messages {
		delete(c.heard, id)
		if err := os.Remove(c.photoPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			c.log.Warn("removing an answered message's photo", "message", id, "err", err)
		}
	}
}

// pruneMedia removes the photos of messages no longer unanswered, left by
// a core that stopped between an answer and the removal.
func (c *Core) pruneMedia(left []state.Admitted) {
	entries, err := os.ReadDir(c.layout.Photos())
	if err != nil {
		return // none kept
	}
	for _, e := range entries {
		id, err := strconv.ParseInt(e.Name(), 10, 64)
		if err == nil && slices.ContainsFunc(left, func(m state.Admitted) bool { return m.ID == id }) {
			continue
		}
		if err := os.Remove(filepath.Join(c.layout.Photos(), e.Name())); err != nil {
			c.log.Warn("removing a photo of an answered message", "file", e.Name(), "err", err)
		}
	}
}
