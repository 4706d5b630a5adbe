package sandbox

import (
	"fmt"
	"strings"
	"sync"
)

// tailBuffer keeps the last max bytes written to it and counts the rest:
// the end of a failing command's output is where the error is.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte // a ring once full
	start int    // where the oldest byte is, once full
	total int64
}

func newTailBuffer(max int) *tailBuffer {
	return &tailBuffer{max: max, buf: make([]byte, 0, min(max, 4096))}
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	if len(p) > b.max {
		p = p[len(p)-b.max:]
	}
	if room := b.max - len(b.buf); room > 0 {
		take := min(room, len(p))
		b.buf = append(b.buf, p[:take]...)
		p = p[take:]
	}
	for len(p) > 0 {
		c := copy(b.buf[b.start:], p)
		p = p[c:]
		b.start = (b.start + c) % b.max
	}
	return n, nil
}

// bytes returns the kept tail in order and how many bytes were dropped
// before it.
func (b *tailBuffer) bytes() ([]byte, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]byte, 0, len(b.buf))
	out = append(out, b.buf[b.start:]...)
	out = append(out, b.buf[:b.start]...)
	return out, b.total - int64(len(out))
}

// Text is the output as valid UTF-8 for a chat message or a model: bytes
// that are not UTF-8 become U+FFFD, and a cut is said at the top.
func (r Result) Text() string {
	text := strings.ToValidUTF8(string(r.Output), "\uFFFD")
	if r.OutputDropped > 0 {
		text = fmt.Sprintf("[… %d earlier bytes of output cut …]\n%s", r.OutputDropped, text)
	}
	return text
}
