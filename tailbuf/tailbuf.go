package tailbuf

import "sync"

// Buffer keeps the last max bytes written to it and counts the rest.
// It is safe for concurrent writers (a command's stdout and stderr).
type Buffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte // a ring once full
	start int    // where the oldest byte is, once full
	total int64
}

// New is a Buffer that keeps the last max bytes (max > 0).
func New(max int) *Buffer {
	return &Buffer{max: max, buf: make([]byte, 0, min(max, 4096))}
}

// Write keeps the end of p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
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

// Bytes returns the kept tail in order and how many bytes were dropped
// before it.
func (b *Buffer) Bytes() ([]byte, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]byte, 0, len(b.buf))
	out = append(out, b.buf[b.start:]...)
	out = append(out, b.buf[:b.start]...)
	return out, b.total - int64(len(out))
}
