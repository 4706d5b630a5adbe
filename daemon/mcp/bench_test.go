package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"shelldon/clock"
	"shelldon/config"
	"shelldon/daemon/mcp"
	"shelldon/daemon/mcp/mcptest"
	"shelldon/sandbox"
	"shelldon/testhost"
)

// sandboxedEverything is the real sandbox and the directory of the SDK's
// everything server, built.
func sandboxedEverything(b *testing.B) (*sandbox.Sandbox, string) {
	b.Helper()
	sb := realSandbox(b)
	return sb, mcptest.Server(b, "everything")
}

// BenchmarkServerStart: the SDK's everything server started in its
// container, its session opened and its tools listed, then stopped; the
// container's peak memory over it is reported (peak-MB).
func BenchmarkServerStart(b *testing.B) {
	sb, dir := sandboxedEverything(b)
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
// running sandboxed server, the same call of the same server given the
// workspace read-write (read-write: a container started for the call),
// and (direct) the same call of the same server run on the host as a
// plain child: the differences are what the container costs a call.
func BenchmarkCall(b *testing.B) {
	sb, dir := sandboxedEverything(b)
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
	b.Run("read-write", func(b *testing.B) {
		// A server that may write: each call a container of its own,
		// its change set collected (none here) and dropped.
		cfg := config.MCP{Name: "everything", Directory: dir, Command: config.MCPDirectory + "/everything", Tools: []string{"greet"},
			Workspace: config.MCPWorkspaceReadWrite}.WithDefaults()
		srv := mcp.New(cfg, sb, mcp.Options{Workspace: b.TempDir(), Empty: b.TempDir(), Clock: clock.Real{}})
		defer srv.Close()
		args := json.RawMessage(`{"name":"a"}`)
		for b.Loop() {
			res, err := srv.Call(context.Background(), "greet", args)
			if err != nil {
				b.Fatal(err)
			}
			res.Changes.Discard()
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

// BenchmarkServerIdle: the SDK's everything server started in its
// container and its tools listed, then left a second with nothing to
// do, as between calls: its container's memory control group's usage
// then (idle-MB: the server, the container's init and the page cache
// charged to them) and the server process's resident set (rss-MB), each
// the mean over the runs.
func BenchmarkServerIdle(b *testing.B) {
	sb, dir := sandboxedEverything(b)
	cfg := config.MCP{Name: "everything", Directory: dir, Command: config.MCPDirectory + "/everything", Tools: []string{"greet"}}.WithDefaults()
	var idle, rss float64
	for b.Loop() {
		srv := mcp.New(cfg, sb, mcp.Options{Workspace: b.TempDir(), Empty: b.TempDir(), Clock: clock.Real{}})
		// Closed however the run ends: a server left up would hold its
		// container's mounts under the benchmark's directory.
		b.Cleanup(srv.Close)
		if _, err := srv.Tools(context.Background()); err != nil {
			b.Fatal(err)
		}
		time.Sleep(time.Second)
		current, resident := idleMemory(b, testhost.OwnProcess(b, config.MCPDirectory+"/everything"))
		idle, rss = idle+current, rss+resident
		srv.Close()
	}
	b.ReportMetric(idle/float64(b.N)/(1<<20), "idle-MB")
	b.ReportMetric(rss/float64(b.N)/(1<<20), "rss-MB")
}

// idleMemory reads, for the process pid, its memory control group's
// usage (cgroup v2's memory.current, or v1's memory.usage_in_bytes on a
// host that keeps the memory controller there) and its own resident set,
// in bytes.
func idleMemory(b *testing.B, pid int) (current, resident float64) {
	b.Helper()
	groups, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		b.Fatal(err)
	}
	var usage string
	for line := range strings.Lines(string(groups)) {
		fields := strings.SplitN(strings.TrimSpace(line), ":", 3)
		switch {
		case len(fields) != 3:
		case fields[1] == "memory":
			usage = filepath.Join("/sys/fs/cgroup/memory", fields[2], "memory.usage_in_bytes")
		case fields[0] == "0" && usage == "":
			usage = filepath.Join("/sys/fs/cgroup", fields[2], "memory.current")
		}
	}
	current = readNumber(b, usage, "")
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if kib, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			resident = 1024 * readNumber(b, "", strings.TrimSuffix(strings.TrimSpace(kib), " kB"))
		}
	}
	return current, resident
}

// readNumber is the number in the file path, or in text when path is "".
func readNumber(b *testing.B, path, text string) float64 {
	b.Helper()
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		text = string(raw)
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if err != nil {
		b.Fatal(err)
	}
	return n
}
