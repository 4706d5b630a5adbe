package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"shelldon/clock"
	"shelldon/config"
	"shelldon/daemon/mcp"
	"shelldon/daemon/mcp/mcptest"
	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
)

// BenchmarkServerStart: the SDK's everything server started in its
// container, its session opened and its tools listed, then stopped; the
// container's peak memory over it is reported (peak-MB).
func BenchmarkServerStart(b *testing.B) {
	img := imagetest.Image(b)
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	dir := mcptest.Server(b, "everything")
	cfg := config.MCP{Name: "everything", Directory: dir, Command: config.MCPDirectory + "/everything", Tools: []string{"greet"}}.WithDefaults()
	var peak int64
	for b.Loop() {
		p := &peakStarter{sb: sb}
		srv := mcp.New(cfg, p, mcp.Options{Workspace: b.TempDir(), Empty: b.TempDir(), Clock: clock.Real{}})
		if _, err := srv.Tools(context.Background()); err != nil {
			b.Fatal(err)
		}
		srv.Close()
		res, _ := p.proc.Wait()
		peak = max(peak, res.MemoryPeak)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
}

// peakStarter keeps the process it started, for its figures.
type peakStarter struct {
	sb   *sandbox.Sandbox
	proc *sandbox.Process
}

func (p *peakStarter) Talk(ctx context.Context, spec sandbox.Spec, talk func(io.WriteCloser, io.ReadCloser) error) (sandbox.Result, error) {
	return p.sb.Talk(ctx, spec, talk)
}

func (p *peakStarter) Start(ctx context.Context, spec sandbox.Spec) (*sandbox.Process, error) {
	proc, err := p.sb.Start(ctx, spec)
	p.proc = proc
	return proc, err
}

// BenchmarkCall: one call of the everything server's greet through a
// running sandboxed server, and (sub-benchmark direct) the same call of
// the same server run on the host as a plain child: the difference is
// what the container costs a call.
func BenchmarkCall(b *testing.B) {
	img := imagetest.Image(b)
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	dir := mcptest.Server(b, "everything")
	b.Run("sandboxed", func(b *testing.B) {
		cfg := config.MCP{Name: "everything", Directory: dir, Command: config.MCPDirectory + "/everything", Tools: []string{"greet"}, IdleStop: config.Duration{Duration: time.Hour}}.WithDefaults()
		srv := mcp.New(cfg, sb, mcp.Options{Workspace: b.TempDir(), Empty: b.TempDir(), Clock: clock.Real{}})
		defer srv.Close()
		args := json.RawMessage(`{"name":"a"}`)
		if _, err := srv.Call(context.Background(), "greet", args); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := srv.Call(context.Background(), "greet", args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		session, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: exec.Command(filepath.Join(dir, "everything"))}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer session.Close()
		for b.Loop() {
			if _, err := session.CallTool(context.Background(), &sdk.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "a"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
