package bus

import (
	"io"
	"strings"
	"testing"

	"shelldon/contracts"
)

// BenchmarkForward is what the hub does with each frame it routes: read
// it, set who sent it, write it on. The body is a broker's completion of
// 16 KiB, a turn's typical large frame.
func BenchmarkForward(b *testing.B) {
	env, err := contracts.NewEnvelope(contracts.KindCompletion, "t-1", map[string]any{
		"text":  strings.Repeat("The pet answers in words, <b>and</b> some code: x := y & z.\n", 256),
		"usage": map[string]int{"prompt": 1200, "completion": 300},
	})
	if err != nil {
		b.Fatal(err)
	}
	var frame strings.Builder
	if err := WriteFrame(&frame, env, 0); err != nil {
		b.Fatal(err)
	}
	in := frame.String()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		got, err := ReadFrame(strings.NewReader(in), 0)
		if err != nil {
			b.Fatal(err)
		}
		got.From, got.Sender = contracts.RoleBroker, "broker"
		if err := WriteFrame(io.Discard, got, 0); err != nil {
			b.Fatal(err)
		}
	}
}
