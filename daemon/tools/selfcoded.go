package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"shelldon/contracts"
)

// Manifest describes a promoted self-coded tool; it lies beside the
// module in the tools directory as <stem>.json.
type Manifest struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Schema      map[string]any `json:"params_schema"`
	// SHA256 is the module's hash when it was promoted.
	SHA256     string `json:"sha256"`
	PromotedAt string `json:"promoted_at"`
	PromotedBy string `json:"promoted_by"`
}

// runnerScript runs a self-coded tool inside the sandbox: it imports the
// module from the workspace's tools directory, calls run with the
// arguments, and insists on a string.
const runnerScript = `
import json, sys
sys.path.insert(0, "/workspace/tools")
stem, args = sys.argv[1], json.loads(sys.argv[2])
out = __import__(stem).run(**args)
if not isinstance(out, str):
    sys.stderr.write("the tool returned %s, not a string\n" % type(out).__name__)
    sys.exit(3)
sys.stdout.write(out)
`

// selfCoded is a promoted tool: FREE, run by core in the sandbox with
// the workspace read-only and no network.
type selfCoded struct{ m Manifest }

func (t selfCoded) Definition() contracts.ToolDefinition {
	return contracts.ToolDefinition{Name: t.m.Name, Description: t.m.Description + " (a tool the pet wrote itself; it runs sandboxed, without network or writes)",
		ParamsSchema: t.m.Schema, Tier: contracts.TierFree}
}

func (t selfCoded) Check(args string) (Checked, error) {
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(args), &fields); err != nil {
		return Checked{}, fmt.Errorf("%w: %s takes a JSON object of arguments: %v", ErrBadArgs, t.m.Name, err)
	}
	if len(args) > maxArgsBytes {
		return Checked{}, fmt.Errorf("%w: the arguments are over %d bytes", ErrBadArgs, maxArgsBytes)
	}
	return Checked{Tier: contracts.TierFree, Sandboxed: true, Argv: []string{"python3", "-c", runnerScript, t.m.Name, args}}, nil
}

// loadSelfCoded reads the manifests of the promoted tools in dir; a
// manifest that does not read, or whose name a built-in has, is skipped.
func loadSelfCoded(dir string, builtin []string) []Tool {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var out []Tool
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var m Manifest
		if json.Unmarshal(data, &m) != nil || m.Name == "" || slices.Contains(builtin, m.Name) ||
			m.Name+".json" != filepath.Base(p) {
			continue
		}
		if m.Schema == nil {
			m.Schema = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		out = append(out, selfCoded{m: m})
	}
	return out
}
