package tools

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"shelldon/contracts"
	"shelldon/policy"
)

type getTime struct{ env Env }

func (getTime) Definition() contracts.ToolDefinition {
	return definition("get_time",
		"Returns the current local date and time of the device in RFC 3339 form with the UTC offset, plus the weekday and time zone name, e.g. \"2026-03-14T09:26:53+01:00 (Saturday, CET)\". Takes no arguments.")
}

func (getTime) Check(args string) (Checked, error) {
	if _, err := parseArgs(args); err != nil {
		return Checked{}, err
	}
	return free("get_time", "checking the time"), nil
}

func (t getTime) Run(_ context.Context, args string) (string, error) {
	if _, err := t.Check(args); err != nil {
		return "", err
	}
	now := t.env.Clock.Now().Local()
	zone, _ := now.Zone()
	return fmt.Sprintf("%s (%s, %s)", now.Format(time.RFC3339), now.Weekday(), zone), nil
}

var commandParam = param{name: "command", description: "The shell command line, run by sh in the workspace directory.", required: true, maxBytes: 8 << 10}

type runShell struct{ env Env }

func (runShell) Definition() contracts.ToolDefinition {
	return definition("run_shell",
		"Runs one shell command line in the workspace directory, inside a sandbox without network, and returns its output (capped). Read-only commands (ls, cat, head, tail, grep, wc, find without -exec/-delete, pytest, echo, pwd) joined by |, &&, || or ; with relative paths and no $variables or $(...) run at once with the workspace read-only; anything else (writes, deletes, network, other programs, absolute paths or ..) first asks the owner, so the turn pauses for their answer.",
		commandParam)
}

func (t runShell) Check(args string) (Checked, error) {
	values, err := parseArgs(args, commandParam)
	if err != nil {
		return Checked{}, err
	}
	return judged("run_shell", policy.ToolArgs{Values: values, Workspace: t.env.Workspace}, "running `"+values["command"]+"`")
}

var urlParam = param{name: "url", description: "An absolute http:// or https:// URL, without user name or password.", required: true, maxBytes: 4 << 10}

type httpGet struct{}

func (httpGet) Definition() contracts.ToolDefinition {
	return definition("http_get",
		"Fetches one http or https URL with GET and returns the start of the response body (capped). Asks the owner first. Redirects are followed up to 5 hops; local, loopback and cloud-metadata addresses are refused, and so are URLs with credentials in them.",
		urlParam)
}

func (httpGet) Check(args string) (Checked, error) {
	values, err := parseArgs(args, urlParam)
	if err != nil {
		return Checked{}, err
	}
	checked, err := judged("http_get", policy.ToolArgs{Values: values}, "")
	if err != nil {
		return Checked{}, &FetchRefusal{URL: redacted(values["url"]), Err: err}
	}
	checked.Doing = "fetching " + checked.URL
	return checked, nil
}

// FetchRefusal is an http_get the address rules refused. Its message
// says so to the model, which would otherwise take it for a network fault,
// so that it can tell the owner; whoever refuses also logs it
// (contracts.EventHTTPGet).
type FetchRefusal struct {
	// URL is the URL asked for, a password in it hidden.
	URL string
	Err error // the rule's refusal: policy.ErrForbiddenURL or policy.ErrForbiddenAddress
}

func (r *FetchRefusal) Error() string {
	return fmt.Sprintf("http_get %q refused by shelldon's address rules, and logged for the owner; tell them why nothing was fetched: %v", r.URL, r.Err)
}

func (r *FetchRefusal) Unwrap() error { return r.Err }

// NetworkRefused says whether err is a refusal by the address rules under
// http_get rather than a failure of the network or the server.
func NetworkRefused(err error) bool {
	return errors.Is(err, policy.ErrForbiddenURL) || errors.Is(err, policy.ErrForbiddenAddress)
}

// redacted is raw with a password in it hidden, for messages and logs.
func redacted(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return raw
}

var gitArgsParam = param{name: "args", description: "The git arguments, e.g. \"status --short\" or \"commit -m 'fix parser'\"; a leading \"git\" may be left out. Quoted like a shell, but no shell runs: no pipes, ; or $.", required: true, maxBytes: 4 << 10}

type gitTool struct{}

func (gitTool) Definition() contracts.ToolDefinition {
	return definition("git",
		"Runs one git command in the workspace repository and returns its output. Asks the owner first. Allowed subcommands: status log diff show add commit branch checkout switch restore stash init fetch pull push remote tag rev-parse reset mv rm. Refused: git config, clone, -c, -C, --git-dir, --work-tree, --exec, --upload-pack and similar options. fetch, pull and push reach remotes over http or https on public addresses only; ssh, git:// and LAN remotes cannot be reached.",
		gitArgsParam)
}

func (gitTool) Check(args string) (Checked, error) {
	values, err := parseArgs(args, gitArgsParam)
	if err != nil {
		return Checked{}, err
	}
	checked, err := judged("git", policy.ToolArgs{Values: values}, "")
	if err != nil {
		return Checked{}, fmt.Errorf("git %q: %w", values["args"], err)
	}
	checked.Doing = "running `" + strings.Join(checked.Argv, " ") + "`"
	return checked, nil
}
