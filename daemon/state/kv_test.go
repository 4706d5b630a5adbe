package state

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

func TestKV(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if v, ok, err := s.Get(ctx, "mood"); err != nil || ok || v != nil {
		t.Errorf("Get of a missing key = %q, %v, %v, want nothing", v, ok, err)
	}
	big := bytes.Repeat([]byte{0xff}, MaxKVValueBytes)
	puts := []struct {
		key   string
		value []byte
	}{
		{"mood", []byte(`{"mood":"content"}`)},
		{"mood", []byte(`{"mood":"sleepy"}`)}, // overwrites
		{"empty", nil},
		{"binary", []byte{0, 1, 2, 0}},
		{"at the cap", big},
	}
	for _, p := range puts {
		if err := s.Put(ctx, p.key, p.value); err != nil {
			t.Fatalf("Put(%q) = %v", p.key, err)
		}
	}
	tests := []struct {
		key  string
		want []byte
	}{
		{"mood", []byte(`{"mood":"sleepy"}`)},
		{"empty", []byte{}},
		{"binary", []byte{0, 1, 2, 0}},
		{"at the cap", big},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			v, ok, err := s.Get(ctx, tt.key)
			if err != nil || !ok || !bytes.Equal(v, tt.want) {
				t.Errorf("Get(%q) = %d bytes, %v, %v, want %d bytes", tt.key, len(v), ok, err, len(tt.want))
			}
		})
	}

	if err := s.Put(ctx, "mood", append(big, 0)); !errors.Is(err, ErrValueTooBig) {
		t.Errorf("Put of %d bytes = %v, want ErrValueTooBig", MaxKVValueBytes+1, err)
	}
	if err := s.Put(ctx, "", []byte("x")); err == nil {
		t.Error("Put without a key = nil error, want one")
	}
	if v, _, _ := s.Get(ctx, "mood"); string(v) != `{"mood":"sleepy"}` {
		t.Errorf("mood after the refused Put = %q, want it unchanged", v)
	}
	if _, ok, _ := s.Get(ctx, ""); ok {
		t.Error("the refused Put stored an empty key")
	}
}
