package bus

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

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
	buf, err := appendEnvelope(make([]byte, 4, 4+headerRoom+len(env.Body)), env)
	if err != nil {
		return fmt.Errorf("encode %s frame: %w", env.Kind, err)
	}
	payload := len(buf) - 4
	if payload > max {
		return fmt.Errorf("write %s frame of %d bytes: %w (limit %d)", env.Kind, payload, ErrFrameTooLarge, max)
	}
	binary.BigEndian.PutUint32(buf, uint32(payload))
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("write %s frame: %w", env.Kind, err)
	}
	return nil
}

// headerRoom is room for an envelope's fields but its body.
const headerRoom = 256

// header is an envelope but its body, encoded as encoding/json does.
type header struct {
	Kind   contracts.Kind `json:"kind"`
	From   contracts.Role `json:"from,omitempty"`
	Turn   string         `json:"turn,omitempty"`
	To     string         `json:"to,omitempty"`
	Sender string         `json:"sender,omitempty"`
}

// appendEnvelope appends env's JSON to buf: its fields as encoding/json
// writes them, and its body as it is. A body is valid JSON wherever an
// envelope comes from (contracts.NewEnvelope encodes it, ReadBody's
// decoding of a frame checked it), so it is not scanned and re-compacted
// again on every hop: that was most of what core's bus cost a turn, every
// frame it routed checked and copied anew (BenchmarkForward).
func appendEnvelope(buf []byte, env contracts.Envelope) ([]byte, error) {
	head, err := json.Marshal(header{Kind: env.Kind, From: env.From, Turn: env.Turn, To: env.To, Sender: env.Sender})
	if err != nil {
		return nil, err
	}
	if len(env.Body) == 0 {
		return append(buf, head...), nil
	}
	buf = append(buf, head[:len(head)-1]...) // without its closing brace
	buf = append(buf, `,"body":`...)
	buf = append(buf, env.Body...)
	return append(buf, '}'), nil
}

// ReadFrame reads one frame and decodes its envelope. io.EOF means the
// peer closed cleanly between frames.
func ReadFrame(r io.Reader, max int) (contracts.Envelope, error) {
	n, err := ReadLength(r, max)
	if err != nil {
		return contracts.Envelope{}, err
	}
	return ReadBody(r, n)
}

// ReadLength reads a frame's header: the length of the body that follows,
// at most max (DefaultMaxFrame when max is not positive). io.EOF means
// the peer closed cleanly between frames. A reader that shares a budget
// among connections takes the length from it before it reads the body
// with [ReadBody].
func ReadLength(r io.Reader, max int) (int, error) {
	if max <= 0 {
		max = DefaultMaxFrame
	}
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if uint64(n) > uint64(max) {
		return 0, fmt.Errorf("read frame of %d bytes: %w (limit %d)", n, ErrFrameTooLarge, max)
	}
	return int(n), nil
}

// bodyChunk is the most of a body read into memory before its bytes
// arrive: the buffer grows with what the peer sent, never with what its
// header declared, so a peer that declares a large frame and sends little
// of it holds little of the reader's memory.
const bodyChunk = 64 << 10

// ReadBody reads the n-byte body of a frame whose header [ReadLength]
// read, and decodes its envelope.
func ReadBody(r io.Reader, n int) (contracts.Envelope, error) {
	payload := make([]byte, 0, min(n, bodyChunk))
	for len(payload) < n {
		if len(payload) == cap(payload) {
			// Doubling, up to the frame: what is held stays within twice
			// what arrived.
			payload = slices.Grow(payload, min(n-len(payload), len(payload)))
		}
		got, err := r.Read(payload[len(payload):min(n, cap(payload))])
		payload = payload[:len(payload)+got]
		if err != nil && len(payload) < n {
			// A header promised a body, so even a clean EOF here is a
			// cut-off frame; any other error (a deadline, a reset) is
			// kept as it is.
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return contracts.Envelope{}, fmt.Errorf("read frame body: %w", err)
		}
	}
	var env contracts.Envelope
	if err := json.Unmarshal(payload, &env); err != nil {
		return contracts.Envelope{}, fmt.Errorf("decode frame: %w", err)
	}
	return env, nil
}
