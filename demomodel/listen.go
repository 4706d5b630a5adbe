package demomodel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// ErrNotLoopback is returned by [Listen] for an address off this machine:
// the demo model has no authentication, so it must never face a network.
var ErrNotLoopback = errors.New("not a loopback address")

// shutdownGrace is how long Serve lets answers in flight finish.
const shutdownGrace = 2 * time.Second

// Listen opens a TCP listener on addr ("127.0.0.1:0", "[::1]:8080",
// "localhost:0"), refusing any host that is not loopback.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("listen %q: %w; use 127.0.0.1, ::1 or localhost", addr, ErrNotLoopback)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %q: %w", addr, err)
	}
	// "localhost" is whatever the resolver says; check where it landed.
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("listen %q: bound %s: %w", addr, ln.Addr(), ErrNotLoopback)
	}
	return ln, nil
}

// BaseURL is the OpenAI base URL for a server listening on addr, such as
// "http://127.0.0.1:41234/v1".
func BaseURL(addr net.Addr) string {
	return "http://" + addr.String() + "/v1"
}

// WriteAddrFile writes baseURL to path atomically (a temporary file in the
// same directory, renamed over path), so a launcher polling for the file
// never reads half an address.
func WriteAddrFile(path, baseURL string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write address file %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.WriteString(baseURL); err != nil {
		return fmt.Errorf("write address file %s: %w", path, err)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write address file %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write address file %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write address file %s: %w", path, err)
	}
	return nil
}

// Serve answers on ln until ctx is done, then shuts down: requests still
// waiting on a scripted delay or hang are cancelled, and answers in flight
// get a short grace.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		// Requests inherit ctx, so a hanging step ends with the server.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve demo model: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		hs.Close()
		return fmt.Errorf("shut down demo model: %w", err)
	}
	return nil
}
