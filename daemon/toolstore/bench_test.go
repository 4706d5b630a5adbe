package toolstore_test

import (
	"context"
	"path/filepath"
	"testing"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/tools"
	"shelldon/daemon/toolstore"
	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
)

const greetModule = `DESCRIPTION = "Greets someone by name."
PARAMS_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}

def run(name="world"):
    return "hello, " + name
`

// BenchmarkCallKeptTool is one call of a kept tool as core makes it: the
// store loads the tool and checks its hashes, puts the checked module in
// a directory of its own, the registry's check builds the runner's argv,
// and the sandbox runs it with the module bound read-only and the
// workspace read-only (target: under 300 ms).
func BenchmarkCallKeptTool(b *testing.B) {
	img := imagetest.Image(b)
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	store, err := toolstore.Open(filepath.Join(b.TempDir(), "tools"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	if err := store.Keep(toolstore.Manifest{Name: "greet", Description: "Greets."}, []byte(greetModule), []byte("def test_x(): pass\n")); err != nil {
		b.Fatal(err)
	}
	ws := b.TempDir()
	reg := tools.Builtins(tools.Env{Workspace: ws, Clock: clock.Real{}})
	for b.Loop() {
		tool, err := store.Load("greet")
		if err != nil {
			b.Fatal(err)
		}
		dir, done, err := store.Prepare("bench", tool)
		if err != nil {
			b.Fatal(err)
		}
		registered, _ := reg.WithSelfCoded(toolDefs(tool)).Lookup("greet")
		checked, err := registered.Check(`{"name": "owner"}`)
		if err != nil {
			b.Fatal(err)
		}
		res, err := sb.Run(context.Background(), sandbox.Spec{Argv: checked.Argv, Workspace: ws, View: sandbox.ReadOnly,
			Binds: []sandbox.Bind{{Source: dir, Target: tools.SelfCodedMount}}})
		done()
		if err != nil || res.ExitCode != 0 || string(res.Output) != "hello, owner" {
			b.Fatalf("call = %d %q, %v", res.ExitCode, res.Output, err)
		}
	}
}

func toolDefs(t toolstore.Tool) []contracts.ToolDefinition {
	return []contracts.ToolDefinition{t.Definition()}
}
