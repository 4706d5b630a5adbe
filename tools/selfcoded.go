package tools

import (
	"encoding/json"
	"fmt"
	"strings"

	"shelldon/contracts"
	"shelldon/policy"
)

// SelfCodedMount is where core shows a self-coded tool's verified module
// inside the sandbox, read-only, for the runner to import.
const SelfCodedMount = "/run/shelldon/tool"

// runnerScript runs a self-coded tool inside the sandbox: it imports the
// module core bound at SelfCodedMount, calls run with the arguments, and
// insists on a string. The tool's directory goes last on sys.path: its
// module is found there, and what it imports is Python's own.
const runnerScript = `
import json, sys
sys.path.append("` + SelfCodedMount + `")
stem, args = sys.argv[1], json.loads(sys.argv[2])
out = __import__(stem).run(**args)
if not isinstance(out, str):
    sys.stderr.write("the tool returned %s, not a string\n" % type(out).__name__)
    sys.exit(3)
sys.stdout.write(out)
`

// selfCoded is a promoted tool: FREE, run by core in the sandbox with the
// workspace read-only and no network, from the module core checked.
type selfCoded struct{ def contracts.ToolDefinition }

func (t selfCoded) Definition() contracts.ToolDefinition {
	d := t.def
	d.Description += " (a tool the pet wrote itself; it runs sandboxed, without network or writes)"
	d.Tier = policy.ToolTier(d.Name, true)
	if d.ParamsSchema == nil {
		d.ParamsSchema = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return d
}

func (t selfCoded) Check(args string) (Checked, error) {
	args, err := objectArgs(t.def.Name, args)
	if err != nil {
		return Checked{}, err
	}
	checked, err := judged(t.def.Name, policy.ToolArgs{SelfCoded: true}, "running my tool "+t.def.Name)
	if err != nil {
		return Checked{}, err
	}
	checked.Argv = policy.Python("-c", runnerScript, t.def.Name, args)
	return checked, nil
}

// objectArgs checks that the arguments of the tool name, as the model
// wrote them, are one JSON object within the bound, and returns them,
// "{}" for none.
func objectArgs(name, args string) (string, error) {
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	if len(args) > maxArgsBytes {
		return "", fmt.Errorf("%w: the arguments are over %d bytes", ErrBadArgs, maxArgsBytes)
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(args), &fields); err != nil || fields == nil {
		return "", fmt.Errorf("%w: %s takes a JSON object of arguments", ErrBadArgs, name)
	}
	return args, nil
}
