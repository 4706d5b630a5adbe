package demomodel

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestListenRefusesNonLoopback(t *testing.T) {
	tests := []struct {
		addr    string
		wantErr error
	}{
		{"0.0.0.0:0", ErrNotLoopback},
		{":0", ErrNotLoopback},
		{"[::]:0", ErrNotLoopback},
		{"192.0.2.1:0", ErrNotLoopback},
		{"example.com:0", ErrNotLoopback},
		{"127.0.0.1", nil}, // no port: refused, but not for its host
	}
	for _, tt := range tests {
		ln, err := Listen(tt.addr)
		if err == nil {
			ln.Close()
			t.Errorf("Listen(%q) succeeded, want an error", tt.addr)
			continue
		}
		if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
			t.Errorf("Listen(%q) = %v, want %v", tt.addr, err, tt.wantErr)
		}
	}
}

func TestListenLoopback(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		ln, err := Listen(addr)
		if err != nil {
			t.Errorf("Listen(%q) = %v, want a listener", addr, err)
			continue
		}
		url := BaseURL(ln.Addr())
		ln.Close()
		if !strings.HasPrefix(url, "http://") || !strings.HasSuffix(url, "/v1") {
			t.Errorf("BaseURL = %q, want http://HOST:PORT/v1", url)
		}
	}
}

func TestWriteAddrFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.addr")
	for _, url := range []string{"http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"} {
		if err := WriteAddrFile(path, url); err != nil {
			t.Fatalf("WriteAddrFile: %v", err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != url {
			t.Errorf("address file holds %q (%v), want %q", got, err, url)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the address file", len(entries))
	}
	if err := WriteAddrFile(filepath.Join(dir, "no", "such", "dir"), "x"); err == nil {
		t.Error("WriteAddrFile into a missing directory succeeded")
	}
}

func TestServeStopsWithContext(t *testing.T) {
	srv := New()
	hanging := make(chan struct{})
	srv.Fallback = func(Request) Step { close(hanging); return Step{Hang: true} }
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()

	clientErr := make(chan error, 1)
	go func() {
		resp, err := http.Post(BaseURL(ln.Addr())+"/chat/completions", "application/json", strings.NewReader(helloBody))
		if err == nil {
			resp.Body.Close()
		}
		clientErr <- err
	}()
	<-hanging
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v after cancel, want nil", err)
		}
	case <-time.After(guard):
		t.Fatal("Serve still running after cancel")
	}
	if err := <-clientErr; err == nil {
		t.Error("hanging request got an answer, want the connection dropped")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("listener still accepts after Serve returned")
	}
}
