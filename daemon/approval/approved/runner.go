package approved

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"path/filepath"
	"strings"

	"shelldon/beneath"
	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/fetch"
	"shelldon/policy"
	"shelldon/sandbox"
	"shelldon/tools"
)

// Sandbox runs one command in a throwaway container: [sandbox.Sandbox].
type Sandbox interface {
	Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error)
}

// Runner carries out approved requests in one workspace.
type Runner struct {
	// Workspace is the workspace directory; Vault the secrets directory.
	Workspace, Vault string
	// Kept is core's own directory for change sets that wait for the
	// owner.
	Kept string
	// Scratch is core's own directory for what a sandboxed run is shown
	// besides the workspace (the tests as they were, for the guard): it
	// must be visible where sandboxed commands start (under the state
	// directory); empty is the system's temporary directory.
	Scratch string
	// Sandbox runs commands; nil when the host has none, and NoSandbox
	// says why.
	Sandbox   Sandbox
	NoSandbox error
	// Tools checks an approved call again: the built-in tools.
	Tools *tools.Registry
	// Fetch carries out an approved http_get; nil is the guarded client
	// ([fetch.Getter]) with its defaults.
	Fetch Fetcher
	// MCP are the owner's MCP servers' tools; nil for none.
	MCP MCPTools
	Log *slog.Logger
}

// A Runner is the authority's executor.
var _ approval.Executor = (*Runner)(nil)

// MCPTools are the owner's MCP servers' tools as core offers and calls
// them.
type MCPTools interface {
	// Offered are the tools a turn may offer, each with its tier.
	Offered() []contracts.ToolDefinition
	// Call calls one in its server's container.
	Call(ctx context.Context, call contracts.ToolCall) MCPAnswer
}

// MCPAnswer is what one MCP call came to.
type MCPAnswer struct {
	// Answer is for the model, what the server said fenced; OK says the
	// tool answered without an error.
	Answer string
	OK     bool
	// Outside is where the answer's text came from, "" when nothing came
	// from the server.
	Outside string
	// Changes are what a server the owner gave the workspace read-write
	// wrote in the call, not applied; nil for every other server.
	Changes *sandbox.ChangeSet
}

// Fetcher fetches one approved URL: [fetch.Getter].
type Fetcher interface {
	Get(ctx context.Context, url string) (fetch.Response, error)
}

// maxEditBytes caps the file an edit reads.
const maxEditBytes = 4 << 20

// Check checks a call as the tools do and accepts only a call that asks
// the owner: the authority checks a worker's request with it before
// parking it, and again before an approved call runs.
func (r *Runner) Check(call contracts.ToolCall) (tools.Checked, error) {
	registry := r.Tools
	if r.MCP != nil {
		registry = registry.WithMCP(r.MCP.Offered())
	}
	tool, ok := registry.Lookup(call.Name)
	if !ok {
		return tools.Checked{}, fmt.Errorf("there is no tool %q", call.Name)
	}
	checked, err := tool.Check(call.Args)
	if err != nil {
		return tools.Checked{}, err
	}
	if checked.Tier != contracts.TierRisky {
		return tools.Checked{}, fmt.Errorf("%s with these arguments does not need the owner", call.Name)
	}
	return checked, nil
}

// Run carries out a verified call.
func (r *Runner) Run(ctx context.Context, v approval.Verified) approval.Result {
	req, checked := v.Request(), v.Checked()
	call := req.Call.Call
	if call.Name == "http_get" {
		answer, from := r.fetch(ctx, req.Key, checked.URL)
		return approval.Result{Answer: answer, Outside: from}
	}
	if checked.MCP {
		// The server is sent exactly the arguments the owner was shown.
		got := r.MCP.Call(ctx, contracts.ToolCall{ID: call.ID, Name: call.Name, Args: checked.Content})
		if got.Changes == nil || len(got.Changes.Changes) == 0 {
			got.Changes.Discard()
			return approval.Result{Answer: got.Answer, Outside: got.Outside}
		}
		res := r.settle(req, got.Answer, got.Changes, func(changes []policy.FileChange) []string {
			return policy.MCPWriteRisks(call.Name, changes)
		})
		res.Outside = got.Outside
		return res
	}
	g, err := r.openGuard(req.Key)
	if err != nil {
		return approval.Result{Answer: "error: could not read the workspace's tests before the change: " + err.Error()}
	}
	defer g.close()
	ws := g.ws
	var res approval.Result
	switch call.Name {
	case "write_file":
		res.Answer = r.write(ws, checked.Path, func([]byte) ([]byte, error) { return []byte(checked.Content), nil })
	case "edit_file":
		res.Answer = r.write(ws, checked.Path, func(old []byte) ([]byte, error) {
			edited, err := tools.ApplyEdit(string(old), checked.Old, checked.New)
			return []byte(edited), err
		})
	case "run_shell", "git":
		// Only git's remote verbs get the network; a shell command that
		// wants it (curl, pip) runs without.
		network := call.Name == "git" && checked.Network
		res = r.command(ctx, req, checked.Argv, network)
	default:
		return approval.Result{Answer: fmt.Sprintf("error: core does not carry out %s", call.Name)}
	}
	if note := g.check(ctx); note != "" {
		res.Answer += "\n" + note
		if res.Applied != nil {
			res.Applied.Guard = note
		}
	}
	return res
}

// write writes the new content of a workspace file, made from its old
// content by change, beneath the workspace without following a link.
func (r *Runner) write(ws *beneath.Root, given string, change func(old []byte) ([]byte, error)) string {
	rel, err := r.jailed(given)
	if err != nil {
		return "error: " + err.Error()
	}
	old, err := ws.ReadFile(rel, maxEditBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "error: " + err.Error()
	}
	data, err := change(old)
	if err != nil {
		return "error: " + err.Error()
	}
	if dir := path.Dir(rel); dir != "." {
		if err := ws.MkdirAll(dir, 0o755); err != nil {
			return "error: " + err.Error()
		}
	}
	if err := ws.WriteFile(rel, data, 0o644); err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(data), given)
}

// jailed resolves a path the model gave in the jail (the vault, the
// credential names, the way out are refused) and returns it relative to
// the workspace, links resolved, for beneath.
func (r *Runner) jailed(given string) (string, error) {
	resolved, err := beneath.Jail{Root: r.Workspace, Vault: r.Vault}.Resolve(given)
	if err != nil {
		return "", err
	}
	root, err := filepath.EvalSymlinks(r.Workspace)
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	rel, err := filepath.Rel(root, resolved)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("path %q: %w", given, beneath.ErrOutsideWorkspace)
	}
	return filepath.ToSlash(rel), nil
}

// fetch carries out turn's approved http_get through the guarded client,
// and logs what came of it for the owner. A body the server sent is
// fenced as untrusted data, under the URL it came from (the last hop of
// any redirects), which fetch returns too; from is "" when nothing came.
func (r *Runner) fetch(ctx context.Context, turn, url string) (answer, from string) {
	var getter Fetcher = fetch.Getter{}
	if r.Fetch != nil {
		getter = r.Fetch
	}
	res, err := getter.Get(ctx, url)
	if tools.NetworkRefused(err) {
		r.Log.Warn("http_get refused", contracts.AuditEvent, contracts.EventHTTPGet, "turn", turn, "url", url, "decision", "refused", "why", err.Error())
		return "error: " + (&tools.FetchRefusal{URL: url, Err: err}).Error(), ""
	}
	if err != nil {
		return "error: " + err.Error(), ""
	}
	r.Log.Info("http_get", contracts.AuditEvent, contracts.EventHTTPGet, "turn", turn, "url", url, "decision", "fetched",
		"status", res.Status, "bytes", len(res.Body))
	from = cmp.Or(res.URL, url)
	body := strings.ToValidUTF8(string(res.Body), "\uFFFD")
	if res.Truncated {
		body += "\n[… cut: the body was longer]"
	}
	return fmt.Sprintf("HTTP %d %s\n%s", res.Status, res.ContentType, FenceUntrusted(from, body)), from
}
