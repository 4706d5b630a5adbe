package bus

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"shelldon/contracts"
)

// DefaultMaxFrame bounds one frame when the caller sets no limit.
const DefaultMaxFrame = 4 << 20

// ErrFrameTooLarge is returned when a frame's length exceeds the limit; the
// connection cannot be resynchronised after it and should be closed.
var ErrFrameTooLarge = errors.New("frame too large")

// WriteFrame encodes env and writes it as one frame.
func WriteFrame(w io.Writer, env contracts.Envelope, max int) error {
	if max <= 0 {
		max = DefaultMaxFrame
	}
	payload, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("encode %s frame: %w", env.Kind, err)
	}
	if len(payload) > max {
		return fmt.Errorf("write %s frame of %d bytes: %w (limit %d)", env.Kind, len(payload), ErrFrameTooLarge, max)
	}
	buf := make([]byte, 4+len(payload))
	binary.BigEndian.PutUint32(buf, uint32(len(payload)))
	copy(buf[4:], payload)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("write %s frame: %w", env.Kind, err)
	}
	return nil
}

// ReadFrame reads one frame and decodes its envelope. io.EOF means the
// peer closed cleanly between frames.
func ReadFrame(r io.Reader, max int) (contracts.Envelope, error) {
	if max <= 0 {
		max = DefaultMaxFrame
	}
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return contracts.Envelope{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if uint64(n) > uint64(max) {
		return contracts.Envelope{}, fmt.Errorf("read frame of %d bytes: %w (limit %d)", n, ErrFrameTooLarge, max)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		// A header promised a body, so even a clean EOF here is a cut-off
		// frame; any other error (a deadline, a reset) is kept as it is.
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return contracts.Envelope{}, fmt.Errorf("read frame body: %w", err)
	}
	var env contracts.Envelope
	if err := json.Unmarshal(payload, &env); err != nil {
		return contracts.Envelope{}, fmt.Errorf("decode frame: %w", err)
	}
	return env, nil
}
