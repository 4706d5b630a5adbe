package toolstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/toolstore"
	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
	"shelldon/tools"
)

const greetModule = `DESCRIPTION = "Greets someone by name."
PARAMS_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}

def run(name="world"):
    return "hello, " + name
`

// keptGreet is a store holding greet, a sandbox to call it in, and an
// empty workspace it runs over.
type keptGreet struct {
	sb    *sandbox.Sandbox
	store *toolstore.Store
	ws    string
	reg   *tools.Registry
}

func newKeptGreet(tb testing.TB) keptGreet {
	tb.Helper()
	img := imagetest.Image(tb)
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	store, err := toolstore.Open(filepath.Join(tb.TempDir(), "tools"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	if err := store.Keep(toolstore.Manifest{Name: "greet", Description: "Greets."}, []byte(greetModule), []byte("def test_x(): pass\n")); err != nil {
		tb.Fatal(err)
	}
	ws := tb.TempDir()
	return keptGreet{sb: sb, store: store, ws: ws, reg: tools.Builtins(tools.Env{Workspace: ws, Clock: clock.Real{}})}
}

// call is one call of greet as core makes it: the store loads the tool
// and checks its hashes, puts the checked module in a directory of its
// own, the registry's check builds the runner's argv, and the sandbox
// runs it with the module bound read-only and the workspace read-only.
func (k keptGreet) call(tb testing.TB) sandbox.Result {
	tb.Helper()
	tool, err := k.store.Load("greet")
	if err != nil {
		tb.Fatal(err)
	}
	dir, done, err := k.store.Prepare("bench", tool)
	if err != nil {
		tb.Fatal(err)
	}
	defer done()
	registered, _ := k.reg.WithSelfCoded(toolDefs(tool)).Lookup("greet")
	checked, err := registered.Check(`{"name": "owner"}`)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := k.sb.Run(context.Background(), sandbox.Spec{Argv: checked.Argv, Workspace: k.ws, View: sandbox.ReadOnly,
		Binds: []sandbox.Bind{{Source: dir, Target: tools.SelfCodedMount}}})
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// BenchmarkCallKeptTool is one call of a kept tool as core makes it
// (keptGreet.call; target: under 300 ms).
func BenchmarkCallKeptTool(b *testing.B) {
	k := newKeptGreet(b)
	for b.Loop() {
		if res := k.call(b); res.ExitCode != 0 || string(res.Output) != "hello, owner" {
			b.Fatalf("call = %d %q", res.ExitCode, res.Output)
		}
	}
}

// TestAKeptToolIgnoresTheWorkspacesModules: the runner imports Python's
// own json, not a json.py in the workspace it runs over, so a module an
// approved write left there cannot make up a kept tool's answer (before,
// the runner printed the workspace's "forged").
func TestAKeptToolIgnoresTheWorkspacesModules(t *testing.T) {
	k := newKeptGreet(t)
	forger := "import sys\nsys.stdout.write('forged')\nsys.exit(0)\n"
	if err := os.WriteFile(filepath.Join(k.ws, "json.py"), []byte(forger), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := k.call(t); res.ExitCode != 0 || string(res.Output) != "hello, owner" {
		t.Errorf("greet with a json.py in the workspace = exit %d %q, want its own answer", res.ExitCode, res.Output)
	}
}

func toolDefs(t toolstore.Tool) []contracts.ToolDefinition {
	return []contracts.ToolDefinition{t.Definition()}
}
