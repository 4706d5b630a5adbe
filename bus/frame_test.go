package bus_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"shelldon/bus"
	"shelldon/contracts"
)

// frameOf builds a raw frame: a big-endian length and payload as given,
// so tests can lie about the length.
func frameOf(declared uint32, payload string) []byte {
	buf := binary.BigEndian.AppendUint32(nil, declared)
	return append(buf, payload...)
}

func TestFrameRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		env  contracts.Envelope
	}{
		{"empty", contracts.Envelope{}},
		{"hello", contracts.Envelope{Kind: contracts.KindHello, From: contracts.RoleWorker, Turn: "t-1", Body: []byte(`{"role":"worker","turn":"t-1"}`)}},
		{"addressed", contracts.Envelope{Kind: contracts.KindOutbound, From: contracts.RoleCore, To: "cli", Sender: "core", Body: []byte(`{"text":"héllo <b>&</b> 🐢"}`)}},
		{"body is a string", contracts.Envelope{Kind: contracts.KindInbound, Body: []byte(`"just text"`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := bus.WriteFrame(&buf, tt.env, 0); err != nil {
				t.Fatalf("WriteFrame(%+v) = %v", tt.env, err)
			}
			if n := binary.BigEndian.Uint32(buf.Bytes()); int(n) != buf.Len()-4 {
				t.Errorf("WriteFrame header says %d bytes, payload is %d", n, buf.Len()-4)
			}
			got, err := bus.ReadFrame(&buf, 0)
			if err != nil {
				t.Fatalf("ReadFrame = %v", err)
			}
			// The body is re-encoded compactly; compare it as JSON.
			if !jsonEqual(t, got.Body, tt.env.Body) {
				t.Errorf("ReadFrame body = %s, want %s", got.Body, tt.env.Body)
			}
			got.Body, tt.env.Body = nil, nil
			if !reflect.DeepEqual(got, tt.env) {
				t.Errorf("ReadFrame = %+v, want %+v", got, tt.env)
			}
			if _, err := bus.ReadFrame(&buf, 0); err != io.EOF {
				t.Errorf("ReadFrame after the last frame = %v, want io.EOF", err)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("decode %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

func TestFrameSequenceOnOneStream(t *testing.T) {
	var buf bytes.Buffer
	kinds := []contracts.Kind{contracts.KindHello, contracts.KindWelcome, contracts.KindJob, contracts.KindCompletion}
	for _, k := range kinds {
		if err := bus.WriteFrame(&buf, contracts.Envelope{Kind: k}, 0); err != nil {
			t.Fatalf("WriteFrame(%s) = %v", k, err)
		}
	}
	for _, want := range kinds {
		got, err := bus.ReadFrame(&buf, 0)
		if err != nil || got.Kind != want {
			t.Fatalf("ReadFrame = %s, %v; want %s, nil", got.Kind, err, want)
		}
	}
}

func TestWriteFrameRefusesOversize(t *testing.T) {
	env := contracts.Envelope{Kind: contracts.KindSnapshot, Body: []byte(`"` + strings.Repeat("x", 200) + `"`)}
	var buf bytes.Buffer
	err := bus.WriteFrame(&buf, env, 100)
	if !errors.Is(err, bus.ErrFrameTooLarge) {
		t.Fatalf("WriteFrame(200-byte body, limit 100) = %v, want ErrFrameTooLarge", err)
	}
	if buf.Len() != 0 {
		t.Errorf("WriteFrame refused the frame but wrote %d bytes", buf.Len())
	}
}

func TestWriteFrameLimitIsInclusive(t *testing.T) {
	env := contracts.Envelope{Kind: contracts.KindJob}
	var probe bytes.Buffer
	if err := bus.WriteFrame(&probe, env, 0); err != nil {
		t.Fatal(err)
	}
	size := probe.Len() - 4
	var buf bytes.Buffer
	if err := bus.WriteFrame(&buf, env, size); err != nil {
		t.Fatalf("WriteFrame(%d-byte frame, limit %d) = %v, want nil", size, size, err)
	}
	if _, err := bus.ReadFrame(&buf, size); err != nil {
		t.Errorf("ReadFrame(%d-byte frame, limit %d) = %v, want nil", size, size, err)
	}
	if err := bus.WriteFrame(&buf, env, size-1); !errors.Is(err, bus.ErrFrameTooLarge) {
		t.Errorf("WriteFrame(%d-byte frame, limit %d) = %v, want ErrFrameTooLarge", size, size-1, err)
	}
}

func TestWriteFrameReportsWriterError(t *testing.T) {
	broken := errors.New("pipe gone")
	err := bus.WriteFrame(failingWriter{broken}, contracts.Envelope{Kind: contracts.KindJob}, 0)
	if !errors.Is(err, broken) {
		t.Errorf("WriteFrame to a failing writer = %v, want it to wrap %v", err, broken)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func TestReadFrameRefusesOversize(t *testing.T) {
	tests := []struct {
		name     string
		declared uint32
		max      int
	}{
		{"one over the limit", 101, 100},
		{"huge against the default", 0xFFFFFFFF, 0},
		{"just over the default", bus.DefaultMaxFrame + 1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bus.ReadFrame(bytes.NewReader(frameOf(tt.declared, "{}")), tt.max)
			if !errors.Is(err, bus.ErrFrameTooLarge) {
				t.Errorf("ReadFrame(declared %d, limit %d) = %v, want ErrFrameTooLarge", tt.declared, tt.max, err)
			}
		})
	}
}

// allocated is how many bytes f allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A peer that declares a huge length must not make the reader allocate it:
// the limit is checked before the buffer is made.
func TestReadFrameHugeLengthDoesNotAllocate(t *testing.T) {
	input := frameOf(1<<30, "{}")
	var err error
	grew := allocated(func() { _, err = bus.ReadFrame(bytes.NewReader(input), (1<<30)-1) })
	if !errors.Is(err, bus.ErrFrameTooLarge) {
		t.Fatalf("ReadFrame(declared 1 GiB, limit 1 GiB-1) = %v, want ErrFrameTooLarge", err)
	}
	if grew > 1<<20 {
		t.Errorf("ReadFrame of a refused 1 GiB frame allocated %d bytes", grew)
	}
}

// A peer that declares a frame within the limit and sends little of it
// must not make the reader allocate what it declared: the buffer grows
// with the bytes that arrive (a flood of connections each declaring
// 4 MiB and sending a little took core's memory with it).
func TestReadFrameAllocatesWhatArrivesNotWhatIsDeclared(t *testing.T) {
	input := frameOf(bus.DefaultMaxFrame, `{"kind":"JOB","body":"`+strings.Repeat("x", 1000))
	var err error
	grew := allocated(func() { _, err = bus.ReadFrame(bytes.NewReader(input), 0) })
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("ReadFrame(declared 4 MiB, sent 1 KB) = %v, want io.ErrUnexpectedEOF", err)
	}
	if grew > 256<<10 {
		t.Errorf("ReadFrame of a 4 MiB frame cut after 1 KB allocated %d bytes, want what arrived, not what was declared", grew)
	}
}

// A frame larger than the first chunk the reader holds still arrives
// whole, across the buffer's growth and short reads.
func TestReadFrameGrowsToALargeBody(t *testing.T) {
	text := strings.Repeat("0123456789", 300_000)
	env, err := contracts.NewEnvelope(contracts.KindInbound, "", text)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := bus.WriteFrame(&buf, env, 0); err != nil {
		t.Fatal(err)
	}
	got, err := bus.ReadFrame(iotest.HalfReader(&buf), 0)
	if err != nil {
		t.Fatalf("ReadFrame of a 3 MB frame = %v", err)
	}
	var back string
	if err := got.Decode(&back); err != nil || back != text {
		t.Errorf("ReadFrame of a 3 MB frame gave back %d bytes (%v), want the %d sent", len(back), err, len(text))
	}
}

func TestReadFrameTruncated(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		want  error
	}{
		{"nothing", nil, io.EOF},
		{"one header byte", []byte{0}, io.ErrUnexpectedEOF},
		{"three header bytes", []byte{0, 0, 0}, io.ErrUnexpectedEOF},
		{"header without body", frameOf(10, ""), io.ErrUnexpectedEOF},
		{"half a body", frameOf(10, `{"kin`), io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bus.ReadFrame(bytes.NewReader(tt.input), 0)
			if !errors.Is(err, tt.want) {
				t.Errorf("ReadFrame(%q) = %v, want %v", tt.input, err, tt.want)
			}
		})
	}
}

// A body cut short by something other than the end of the stream (a read
// deadline, a reset) must say so, not pretend the peer hung up.
func TestReadFrameKeepsTheBodyReadError(t *testing.T) {
	reset := errors.New("connection reset")
	r := io.MultiReader(bytes.NewReader(frameOf(10, "{")), failingReader{reset})
	_, err := bus.ReadFrame(r, 0)
	if !errors.Is(err, reset) {
		t.Errorf("ReadFrame with a failing body read = %v, want it to wrap %v", err, reset)
	}
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestReadFrameGarbage(t *testing.T) {
	tests := []struct {
		name    string
		payload string
	}{
		{"not json", "hello there"},
		{"empty payload", ""},
		{"truncated object", `{"kind":"JOB"`},
		{"wrong type for kind", `{"kind":5}`},
		{"array", `[1,2,3]`},
		{"bad body", `{"kind":"JOB","body":}`},
		{"nul bytes", "\x00\x00\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bus.ReadFrame(bytes.NewReader(frameOf(uint32(len(tt.payload)), tt.payload)), 0)
			if err == nil {
				t.Errorf("ReadFrame(%q) = nil error, want a decode error", tt.payload)
			}
			if errors.Is(err, io.EOF) || errors.Is(err, bus.ErrFrameTooLarge) {
				t.Errorf("ReadFrame(%q) = %v, want a decode error", tt.payload, err)
			}
		})
	}
}

// FuzzReadFrame feeds arbitrary bytes to ReadFrame: it must never panic,
// and whatever it accepts must survive being written and read again.
func FuzzReadFrame(f *testing.F) {
	f.Add(frameOf(2, "{}"))
	f.Add(frameOf(27, `{"kind":"JOB","turn":"t-1"}`))
	f.Add(frameOf(40, `{"kind":"HELLO","body":{"role":"worker"}}`))
	f.Add(frameOf(0xFFFFFFFF, "{}"))
	f.Add(frameOf(4, "null"))
	f.Add([]byte{0, 0})
	f.Add(frameOf(12, `{"body":"<\xff"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := bus.ReadFrame(bytes.NewReader(data), 1<<16)
		if err != nil {
			return
		}
		// Re-encoding normalises (compacts the body, repairs bad UTF-8);
		// after that one pass the frame must be stable.
		var first bytes.Buffer
		if err := bus.WriteFrame(&first, env, 1<<20); err != nil {
			t.Fatalf("WriteFrame(%+v) of an accepted frame = %v", env, err)
		}
		again, err := bus.ReadFrame(bytes.NewReader(first.Bytes()), 1<<20)
		if err != nil {
			t.Fatalf("ReadFrame(%q) of a frame WriteFrame made = %v", first.Bytes(), err)
		}
		var second bytes.Buffer
		if err := bus.WriteFrame(&second, again, 1<<20); err != nil {
			t.Fatalf("WriteFrame(%+v) = %v", again, err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Errorf("frame not stable across a round trip:\n first %q\nsecond %q", first.Bytes(), second.Bytes())
		}
	})
}
