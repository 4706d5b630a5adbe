package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/policy"
)

// ErrBadArgs marks arguments a tool cannot use: not a JSON object, an
// unknown or missing field, a wrong type, a value too long. The wrapping
// message says what is wrong and what the tool expects, so the model can
// correct its call.
var ErrBadArgs = errors.New("bad arguments")

// Env is what the tools may see.
type Env struct {
	// Workspace is the jail root: every path a tool names is relative to it.
	Workspace string
	// Vault is the secrets directory, refused always.
	Vault string
	// Clock tells get_time the time.
	Clock clock.Clock
	// Evaluator is the command python_eval starts for each expression:
	// `shelldon-worker eval`, which runs [ServeEval]. Without it
	// python_eval cannot run (core only checks its calls).
	Evaluator []string
}

// Tool is one tool the model may call.
type Tool interface {
	// Definition is the tool as the model sees it.
	Definition() contracts.ToolDefinition
	// Check parses and validates args, the JSON object as the model wrote
	// it, and says how the call runs. Errors wrap ErrBadArgs for malformed
	// arguments, or the policy's error for a call that may never run.
	Check(args string) (Checked, error)
}

// Checked is Check's verdict on one call.
type Checked struct {
	// Tier says whether the call runs without asking.
	Tier contracts.Tier
	// Note is one line for the owner on what an asking call does; empty for
	// FREE calls.
	Note string
	// Sandboxed means the call is FREE but runs a program, so core runs it
	// read-only in the sandbox (a read-only run_shell command).
	Sandboxed bool
	// Argv is what a sandboxed call runs: a read-only command, or an
	// approved run_shell or git call. Core derives it, and every field
	// below, from its own Check of the arguments, never from what a
	// worker says.
	Argv []string
	// Path and Content are an approved write_file's; Path, Old and New an
	// approved edit_file's. What the owner is shown of them is rendered
	// by the approval authority, which sees exactly these fields.
	Path, Content, Old, New string
	// Resolved is where Path leads in the jail, links followed, relative
	// to the workspace: a rule binds a path only where the two agree.
	Resolved string
	// URL is an approved http_get's.
	URL string
	// Network means the call reaches the network (git fetch, push, pull).
	Network bool
	// SelfCoded marks a call of a self-coded tool: core binds the tool's
	// verified module at SelfCodedMount for the run.
	SelfCoded bool
	// MCP marks a call of an MCP server's tool: core runs it in the
	// server's container, not as a command.
	MCP bool
	// Doing is what the call does, in a few words taken from its parsed
	// arguments ("reading notes.md", "running `pytest -q`"), for the
	// owner's progress line while it runs. It is raw: whoever shows it
	// makes it visible and bounds it.
	Doing string
}

// Local is a FREE tool that runs inside the worker.
type Local interface {
	Tool
	// Run executes a call whose args passed Check, returning the text fed
	// back to the model.
	Run(ctx context.Context, args string) (string, error)
}

// Registry holds tools by name, in the order they were added.
type Registry struct {
	tools   []Tool
	builtin []string
}

// Builtins returns the registry of shelldon's built-in tools.
func Builtins(env Env) *Registry {
	builtin := []Tool{
		getTime{env: env},
		readFile{env: env},
		listDir{env: env},
		pythonEval{env: env},
		runShell{env: env},
		writeFile{env: env},
		editFile{env: env},
		httpGet{},
		gitTool{},
	}
	var names []string
	for _, t := range builtin {
		names = append(names, t.Definition().Name)
	}
	return &Registry{tools: builtin, builtin: names}
}

// WithSelfCoded adds the self-coded tools core offers, as defined; a
// definition whose name a built-in has is left out.
func (r *Registry) WithSelfCoded(defs []contracts.ToolDefinition) *Registry {
	out := &Registry{tools: slices.Clip(r.tools), builtin: r.builtin}
	for _, d := range defs {
		if d.Name != "" && !slices.Contains(r.builtin, d.Name) {
			out.tools = append(out.tools, selfCoded{def: d})
		}
	}
	return out
}

// IsBuiltin reports whether name is one of the built-in tools.
func (r *Registry) IsBuiltin(name string) bool { return slices.Contains(r.builtin, name) }

// BuiltinNames are the names a self-coded tool may not take.
func (r *Registry) BuiltinNames() []string { return slices.Clone(r.builtin) }

// Definitions returns every tool's definition, in a stable order.
func (r *Registry) Definitions() []contracts.ToolDefinition {
	defs := make([]contracts.ToolDefinition, len(r.tools))
	for i, t := range r.tools {
		defs[i] = t.Definition()
	}
	return defs
}

// Lookup returns the tool called name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	for _, t := range r.tools {
		if t.Definition().Name == name {
			return t, true
		}
	}
	return nil, false
}

// maxArgsBytes bounds the raw arguments of any call. write_file's content
// cap is 256 KB; JSON escaping can grow that several times.
const maxArgsBytes = 2 << 20

// param is one string argument of a tool: its schema and its check.
type param struct {
	name        string
	description string
	required    bool
	// maxBytes bounds the value's length.
	maxBytes int
}

// schema builds the JSON schema object of a tool whose arguments are params.
func schema(params ...param) map[string]any {
	properties := map[string]any{}
	required := []string{}
	for _, p := range params {
		properties[p.name] = map[string]any{
			"type":        "string",
			"description": p.description,
			"maxLength":   p.maxBytes,
		}
		if p.required {
			required = append(required, p.name)
		}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           properties,
		"required":             required,
		"additionalProperties": false,
	}
}

// parseArgs decodes args, which must be a JSON object whose fields are
// exactly the given string params, into a map from name to value. An
// optional param that is absent maps to "".
func parseArgs(args string, params ...param) (map[string]string, error) {
	expected := describeParams(params)
	if len(args) > maxArgsBytes {
		return nil, fmt.Errorf("%w: the arguments are %d bytes, more than the %d allowed; expected %s", ErrBadArgs, len(args), maxArgsBytes, expected)
	}
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(args))
	if err := dec.Decode(&raw); err != nil || raw == nil || dec.More() {
		return nil, fmt.Errorf("%w: the arguments must be one JSON object; expected %s", ErrBadArgs, expected)
	}
	values := map[string]string{}
	for name, value := range raw {
		i := slices.IndexFunc(params, func(p param) bool { return p.name == name })
		if i < 0 {
			return nil, fmt.Errorf("%w: unknown field %q; expected %s", ErrBadArgs, name, expected)
		}
		var s string
		if bytes.Equal(bytes.TrimSpace(value), []byte("null")) || json.Unmarshal(value, &s) != nil {
			return nil, fmt.Errorf("%w: field %q must be a string; expected %s", ErrBadArgs, name, expected)
		}
		if len(s) > params[i].maxBytes {
			return nil, fmt.Errorf("%w: field %q is %d bytes, more than the %d allowed", ErrBadArgs, name, len(s), params[i].maxBytes)
		}
		if !utf8.ValidString(s) {
			return nil, fmt.Errorf("%w: field %q is not valid UTF-8", ErrBadArgs, name)
		}
		values[name] = s
	}
	for _, p := range params {
		if _, ok := values[p.name]; !ok && p.required {
			return nil, fmt.Errorf("%w: missing required field %q; expected %s", ErrBadArgs, p.name, expected)
		}
	}
	return values, nil
}

// describeParams says in words what arguments a tool takes.
func describeParams(params []param) string {
	if len(params) == 0 {
		return "an empty object {}"
	}
	fields := make([]string, len(params))
	for i, p := range params {
		optional := ""
		if !p.required {
			optional = ", optional"
		}
		fields[i] = fmt.Sprintf("%q (string%s)", p.name, optional)
	}
	return "an object with " + strings.Join(fields, ", ")
}

// definition assembles a ToolDefinition from its parts, with the tier
// policy gives the tool.
func definition(name, description string, params ...param) contracts.ToolDefinition {
	return contracts.ToolDefinition{Name: name, Description: description, ParamsSchema: schema(params...), Tier: policy.ToolTier(name, false)}
}

// judged asks policy for its verdict on a call of the tool named name,
// whose arguments were parsed and whose facts looked up, and gives it as
// a Checked, doing what doing says.
func judged(name string, args policy.ToolArgs, doing string) (Checked, error) {
	v, err := policy.Tool(name, args)
	if err != nil {
		return Checked{}, err
	}
	return Checked{Tier: v.Tier, Note: v.Note, Sandboxed: v.Sandboxed, Argv: v.Argv, URL: v.URL, Network: v.Network,
		SelfCoded: args.SelfCoded, Doing: doing}, nil
}

// free is policy's verdict on a call of name that takes no facts: a FREE
// tool's, run in the worker, doing what doing says.
func free(name, doing string) Checked {
	checked, _ := judged(name, policy.ToolArgs{}, doing) // only http_get and git refuse, and they take facts
	return checked
}

// RuleCall is a checked call of tool as the owner's rules judge it
// ([policy.RuleFor]).
func (c Checked) RuleCall(tool string) policy.RuleCall {
	rc := policy.RuleCall{Tool: tool, Path: c.Path, Resolved: c.Resolved, Network: c.Network}
	switch {
	case tool == "run_shell" && len(c.Argv) > 0:
		rc.Command = c.Argv[len(c.Argv)-1]
	case tool == "git":
		rc.Argv = c.Argv
	}
	return rc
}
