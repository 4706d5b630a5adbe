// Package mcptest builds real MCP servers for tests: the unmodified
// example servers of the official Go SDK
// (github.com/modelcontextprotocol/go-sdk/examples/server/...) and the
// one shelldon bundles for its demo, each a static binary in a directory
// of its own, ready to be bound into a sandbox container as an [[mcp]]
// table's directory.
package mcptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"shelldon/testhost"
)

// examples is where the SDK keeps its example servers.
const examples = "github.com/modelcontextprotocol/go-sdk/examples/server/"

var (
	mu    sync.Mutex
	built = map[string]string{}
)

// Server builds the SDK's example server name ("everything", "memory")
// once per test binary and returns the directory that holds it, as the
// program name, readable by everyone.
func Server(t testing.TB, name string) string {
	t.Helper()
	return Build(t, examples+name, name)
}

// Build builds the server of package pkg as the program name, once per
// test binary, and returns the directory that holds it, readable by
// everyone.
func Build(t testing.TB, pkg, name string) string {
	t.Helper()
	goBin := testhost.Tool(t, "go", "golang-go")
	mu.Lock()
	defer mu.Unlock()
	if dir, ok := built[pkg]; ok {
		return dir
	}
	dir, err := os.MkdirTemp("", "shelldon-mcp-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, "build", "-trimpath", "-o", filepath.Join(dir, name), pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the MCP server %s: %v\n%s", pkg, err, out)
	}
	built[pkg] = dir
	return dir
}

// Cleanup removes what [Server] built; call it from TestMain after the
// tests.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	for pkg, dir := range built {
		os.RemoveAll(dir)
		delete(built, pkg)
	}
}
